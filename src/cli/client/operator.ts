// `operator raft list-peers`: Consul's command, same columns. The voters are etcd's members in a
// cluster (the leader marked), the agent itself when alone; a commit index etcd does not give is "-".
import { SERVER_FLAGS, table, type ClientCommand } from './command.js';

interface RaftServer {
  readonly ID: string;
  readonly Node: string;
  readonly Address: string;
  readonly Leader: boolean;
  readonly Voter: boolean;
  readonly ProtocolVersion: string;
  readonly LastIndex?: number;
}

export const operatorCommands: ClientCommand[] = [
  {
    name: 'operator raft list-peers',
    synopsis: 'Display the current Raft peer configuration',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...SERVER_FLAGS },
    async run({ api, io }) {
      const reply = await api.json<{ Servers: RaftServer[] }>(
        'GET',
        '/v1/operator/raft/configuration',
        undefined,
        'getting peers',
      );
      const leaderIndex = reply.Servers.find((s) => s.Leader)?.LastIndex;
      const rows = reply.Servers.map((s) => {
        const known = s.LastIndex !== undefined && leaderIndex !== undefined;
        const behind = known ? leaderIndex - s.LastIndex! : 0;
        return [
          s.Node,
          s.ID,
          s.Address,
          s.Leader ? 'leader' : 'follower',
          String(s.Voter),
          s.ProtocolVersion === '' ? '<=1' : s.ProtocolVersion,
          s.LastIndex === undefined ? '-' : String(s.LastIndex),
          s.Leader || !known ? '-' : `${behind} ${behind === 1 ? 'commit' : 'commits'}`,
        ];
      });
      const header = ['Node', 'ID', 'Address', 'State', 'Voter', 'RaftProtocol', 'Commit Index', 'Trails Leader By'];
      io.out(`${table([header, ...rows])}\n`);
      return 0;
    },
  },
];
