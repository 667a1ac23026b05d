// svc-agent/connect: the Connect-native SDK for Node. A service's handle on the mesh
// (ConnectService): its TLS server, whose connections are verified and authorized, and its dialer.
export {
  ConnectService,
  type ConnectServiceOptions,
  type RefusalReason,
  type SdkLogger,
  type ServerOptions,
  type ServiceTimings,
  type ServiceStats,
} from './service.js';
export type { AgentAddress, AgentTls } from './agent-client.js';
export type { Decision, Instance, Leaf, MeshSource, Roots } from './mesh-source.js';
export type { EmbeddedAgent } from './in-process-source.js';
