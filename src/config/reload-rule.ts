// How a reload treats one config key: the AgentConfig field the key sets, and whether the running
// agent takes a change of it or needs a restart. Each key of schema.ts declares one; reload.ts
// derives the reload plan from them and docs/config.md shows them.
import type { AgentConfig } from './types.js';

type Leaf = string | number | boolean | undefined | readonly unknown[];

/** Dotted paths of AgentConfig's values ('tls.certFile'); the service and check blocks are lists. */
type LeafPaths<T, Prefix extends string = ''> = {
  [K in keyof T & string]: T[K] extends Leaf ? `${Prefix}${K}` : LeafPaths<T[K], `${Prefix}${K}.`>;
}[keyof T & string];

export type AgentPath = LeafPaths<Omit<AgentConfig, 'dev'>>;

export type ReloadRule =
  | {
      /** 'applied': the running agent takes a change; 'restart': it keeps the value it started with. */
      readonly reload: 'applied' | 'restart';
      /** The AgentConfig field holding the key's value: a change there names this key. */
      readonly agent: AgentPath;
      /** Why, in a line, when it is not plain (what reads it, and when). */
      readonly why?: string | undefined;
    }
  | {
      /** A key that only overrides another (tls.https over tls.defaults): a reload names and treats it as that key. */
      readonly sameAs: string;
    };

export const appliedRule = (agent: AgentPath, why?: string): ReloadRule => ({ reload: 'applied', agent, why });

export const restartRule = (agent: AgentPath, why?: string): ReloadRule => ({ reload: 'restart', agent, why });
