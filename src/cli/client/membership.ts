// `leave` and `force-leave`: Consul's `consul leave` (the agent leaves its cluster and stops) and
// `consul force-leave [-prune] <node>` (a failed member is made left; -prune removes it at once),
// same words, same exit codes (docs/decisions.md#departed-members).
import type { ClientCommand } from './command.js';

export const membershipCommands: ClientCommand[] = [
  {
    name: 'leave',
    synopsis: 'Gracefully leaves the cluster and shuts down the agent',
    argsUsage: '',
    arity: [0, 0],
    flags: {},
    async run({ api, io }) {
      await api.expectOk('PUT', '/v1/agent/leave', undefined, 'leaving');
      io.out('Graceful leave complete\n');
      return 0;
    },
  },
  {
    name: 'force-leave',
    synopsis: 'Forces a member of the cluster to enter the "left" state',
    argsUsage: 'NODE',
    arity: [1, 1],
    flags: {
      prune: {
        kind: 'bool',
        doc: 'Remove the member from the list of members at once, and its node from the catalog.',
      },
    },
    async run({ api, flags, args }) {
      const node = encodeURIComponent(args[0] as string);
      await api.expectOk(
        'PUT',
        `/v1/agent/force-leave/${node}${flags.prune === true ? '?prune=1' : ''}`,
        undefined,
        'force leaving',
      );
      return 0;
    },
  },
];
