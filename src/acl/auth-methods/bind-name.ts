// A binding rule's BindName (and BindVars.Name) with the login's projected variables interpolated,
// as Consul's lib/template.InterpolateHIL does it for bind names: `${value.team}` references only
// (the HIL a bind name uses), values lowercased, an unknown variable an error; `$${` is a literal
// `${`. Then the name rule of the bind type.

/** Consul's name rules per bind type (acl.IsValidServiceIdentityName, …RoleName, …PolicyName). */
const IDENTITY_NAME = /^[a-z0-9](?:[a-z0-9\-_]*[a-z0-9])?$/;
const ROLE_NAME = /^[A-Za-z0-9\-_]{1,256}$/;
const POLICY_NAME = /^[A-Za-z0-9\-_]{1,128}$/;

export function validBindName(bindType: string, name: string): boolean {
  switch (bindType) {
    case 'service':
    case 'node':
      return name.length <= 256 && IDENTITY_NAME.test(name);
    case 'role':
      return ROLE_NAME.test(name);
    case 'policy':
      return POLICY_NAME.test(name);
    default:
      return true;
  }
}

/** The interpolated text, or `{ error }` with HIL's text. */
export function interpolate(
  template: string,
  vars: Readonly<Record<string, string>>,
  lowercase: boolean,
): string | { readonly error: string } {
  if (!template.includes('${')) return template;
  let out = '';
  let i = 0;
  while (i < template.length) {
    if (template.startsWith('$${', i)) {
      out += '${';
      i += 3;
      continue;
    }
    if (template.startsWith('${', i)) {
      const end = template.indexOf('}', i + 2);
      if (end === -1) return { error: `parse error at 1:${i + 1}: unterminated interpolation` };
      const name = template.slice(i + 2, end).trim();
      if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name)) {
        return { error: `parse error at 1:${i + 3}: unsupported expression ${JSON.stringify(name)}` };
      }
      const value = vars[name];
      if (value === undefined) return { error: `unknown variable accessed: ${name}` };
      out += lowercase ? value.toLowerCase() : value;
      i = end + 1;
      continue;
    }
    out += template[i] as string;
    i++;
  }
  return out;
}
