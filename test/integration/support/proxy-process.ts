// The sidecar proxy as its tests drive it: a free port, `svc-agent connect proxy` as a child
// process whose stderr lines can be waited for, and an echo exchange through a listener.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { MAIN, type AgentProcess } from './agent-process.js';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ProxyProcess {
  readonly child: ChildProcess;
  stderr(): string;
  /** Resolves once the proxy has said `text` on stderr (at any time since it started). */
  said(text: string): Promise<void>;
}

/** Starts a sidecar for `serviceId`; resolves once it says it runs (rejects with what it said if it exits first). */
export function startProxy(
  agent: AgentProcess,
  serviceId: string,
  flags: readonly string[] = [],
  options: { readonly nofile?: number } = {},
): Promise<ProxyProcess> {
  return runProxy(['-sidecar-for', serviceId, '-http-addr', agent.url, ...flags], options);
}

/**
 * Runs `svc-agent connect proxy <args>` (under an open-files limit of `nofile`, with prlimit);
 * resolves once it says it runs, rejects with what it said if it exits first.
 */
export function runProxy(args: readonly string[], options: { readonly nofile?: number } = {}): Promise<ProxyProcess> {
  const command = [
    ...(options.nofile === undefined ? [] : ['prlimit', `--nofile=${options.nofile}:${options.nofile}`]),
    process.execPath,
    MAIN,
    'connect',
    'proxy',
    ...args,
  ];
  const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const said = (text: string): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (!stderr.includes(text)) return;
        child.stderr!.off('data', check);
        resolve();
      };
      child.stderr!.on('data', check);
      check();
    });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    void said('running').then(() => resolve({ child, stderr: () => stderr, said }));
    child.once('exit', (code) => reject(new Error(`connect proxy ${args.join(' ')} exited ${code}: ${stderr}`)));
  });
}

/** Sends `text` on a new connection to `port` (on `host`); resolves with what came back before the close. */
export function exchange(port: number, text: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, host, () => socket.write(text));
    let read = '';
    socket.on('data', (chunk: Buffer) => {
      read += chunk.toString();
      if (read === text) socket.end();
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(read));
  });
}
