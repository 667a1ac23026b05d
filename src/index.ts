// The library entry: embed the agent in-process (its state, and the decisions later issues add)
// with or without its HTTP API.
export { createAgent, type Agent, type AgentOptions } from './agent/index.js';
export type { AuthorizeRequest, AuthorizeResult } from './connect/authorize.js';
export { loadConfig, type LoadInput } from './config/load.js';
export type { AgentConfig } from './config/types.js';
export { AgentError, type ErrorCode, type ErrorKind } from './core/errors.js';
export { FakeClock, systemClock, type Clock } from './core/clock.js';
export { createLogger, silentLogger, type Logger } from './core/log.js';
export type {
  StateStore,
  Row,
  WriteOp,
  CommitResult,
  WatchTarget,
  RangeTarget,
  ReadConsistency,
  ReadResult,
  StoreHealth,
  StoreStats,
} from './state/types.js';
