// The linter `npm test` runs (npm run lint): typescript-eslint's recommended rules plus the type-aware
// rules for promises nobody awaits or handles; nothing about layout (prettier owns that, so
// eslint-config-prettier comes last and switches off every rule that would fight it).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.bench-out/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // `const { Rules: _, ...rest } = x` is how this code drops a field from a copy.
      // `_name`: a parameter an interface's method takes and this implementation does not need.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true, argsIgnorePattern: '^_' }],
      // A `let` read by a callback before it is assigned (signal handlers installed first) cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], languageOptions: { globals: globals.node } },
  prettier,
);
