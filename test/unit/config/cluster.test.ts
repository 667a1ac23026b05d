// The cluster keys: etcd endpoints, prefix, TLS files, user and password, the server role and the
// member lease TTL. Bad values stop start-up with a message naming the key; no endpoints is a lone
// agent, which is always its own server.
import { afterAll, describe, expect, it } from 'vitest';
import { load, problemsOf, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

let n = 0;
const file = (content: unknown): string => tmp.file(`cluster${n++}.json`, content);
const problems = (content: unknown): readonly string[] => problemsOf({ files: [file(content)] });

describe('cluster config', () => {
  it('reads every cluster key', () => {
    const ca = tmp.file('ca.pem', '-----BEGIN CERTIFICATE-----\n');
    const cert = tmp.file('cert.pem', '-----BEGIN CERTIFICATE-----\n');
    const key = tmp.file('key.pem', '-----BEGIN PRIVATE KEY-----\n');
    const c = load({
      files: [
        file({
          server: true,
          cluster: {
            etcd: {
              endpoints: ['https://10.0.0.1:2379', 'https://10.0.0.2:2379'],
              prefix: '/mesh-a/',
              tls: { ca_file: ca, cert_file: cert, key_file: key },
              username: 'svc',
              password: 'secret',
            },
            member_ttl: '3s',
            leader_probe_interval: '5s',
          },
        }),
      ],
    });
    expect(c.server).toBe(true);
    expect(c.cluster).toEqual({
      etcd: {
        endpoints: ['https://10.0.0.1:2379', 'https://10.0.0.2:2379'],
        prefix: '/mesh-a/',
        tls: { caFile: ca, certFile: cert, keyFile: key },
        username: 'svc',
        password: 'secret',
      },
      memberTtlMs: 3_000,
      leaderProbeIntervalMs: 5_000,
    });
  });

  it('makes an agent with etcd a client unless server is set', () => {
    const endpoints = { cluster: { etcd: { endpoints: ['http://127.0.0.1:2379'] } } };
    expect(load({ flags: endpoints }).server).toBe(false);
    expect(load({ flags: { ...endpoints, server: true } }).server).toBe(true);
  });

  it('keeps a lone agent its own server', () => {
    expect(load({ flags: { server: false } }).server).toBe(true);
  });

  it.each([
    [
      { cluster: { etcd: { endpoints: 'http://127.0.0.1:2379' } } },
      'cluster.etcd.endpoints: expected a list of URLs, got "http://127.0.0.1:2379"',
    ],
    [
      { cluster: { etcd: { endpoints: ['127.0.0.1:2379'] } } },
      'cluster.etcd.endpoints: expected http:// or https:// URLs such as "http://127.0.0.1:2379", got "127.0.0.1:2379"',
    ],
    [
      { cluster: { etcd: { endpoints: ['unix:///run/etcd.sock'] } } },
      'cluster.etcd.endpoints: expected http:// or https:// URLs such as "http://127.0.0.1:2379", got "unix:///run/etcd.sock"',
    ],
    [
      { cluster: { etcd: { endpoints: ['http://127.0.0.1:2379/v3'] } } },
      'cluster.etcd.endpoints: expected http:// or https:// URLs such as "http://127.0.0.1:2379", got "http://127.0.0.1:2379/v3"',
    ],
    [
      { cluster: { etcd: { prefix: 'svc/' } } },
      'cluster.etcd.prefix: expected a key prefix starting with "/", got "svc/"',
    ],
    [{ cluster: { etcd: { prefix: '/' } } }, 'cluster.etcd.prefix: expected a key prefix starting with "/", got "/"'],
    [{ cluster: { etcd: { username: 'svc' } } }, 'cluster.etcd.password: required with cluster.etcd.username'],
    [{ cluster: { etcd: { password: 'pw' } } }, 'cluster.etcd.username: required with cluster.etcd.password'],
    [{ cluster: { etcd: { password: 7 } } }, 'cluster.etcd.password: expected a non-empty string, got a number'],
    [{ cluster: { member_ttl: '0s' } }, 'cluster.member_ttl: expected a positive duration, got "0s"'],
    [{ server: 'yes' }, 'server: expected true or false, got "yes"'],
    [{ cluster: { etcd: 'http://x' } }, 'cluster.etcd: expected an object, got "http://x"'],
  ])('rejects %j', (content, message) => {
    expect(problems(content)).toEqual([message]);
  });

  it('requires the client certificate and its key together', () => {
    const cert = tmp.file('only-cert.pem', '-----BEGIN CERTIFICATE-----\n');
    expect(problems({ cluster: { etcd: { tls: { cert_file: cert } } } })).toEqual([
      'cluster.etcd.tls.key_file: required with cluster.etcd.tls.cert_file',
    ]);
  });

  it('names a TLS file it cannot read', () => {
    const missing = `${tmp.dir}/missing-ca.pem`;
    expect(problems({ cluster: { etcd: { tls: { ca_file: missing } } } })).toEqual([
      `cluster.etcd.tls.ca_file: cannot read ${JSON.stringify(missing)}: no such file`,
    ]);
  });
});
