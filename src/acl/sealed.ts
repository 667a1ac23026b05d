// A reply only its asker can open: the asker sends a fresh X25519 public key with its request, and
// the answer is AES-256-GCM under a key both sides derive (ECDH, then HKDF-SHA256). Secrets a server
// shows a client agent cross `<prefix>sign/acl/responses/`, which every client agent may read.
import {
  createCipheriv,
  createDecipheriv,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { agentError } from '../core/errors.js';

export interface Sealed {
  /** The sealer's one-time X25519 public key, SPKI DER base64. */
  readonly Key: string;
  readonly IV: string;
  readonly Data: string;
  readonly Tag: string;
}

const INFO = Buffer.from('svc-agent sealed reply v1');

/** The asker's side: a public key to send, and the opener of the one reply sealed to it. */
export function replyKey(): { readonly publicKey: string; open(sealed: Sealed): unknown } {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return {
    publicKey: spkiBase64(publicKey),
    open(sealed) {
      try {
        const key = derive(privateKey, importKey(sealed.Key), sealed.Key);
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.IV, 'base64'));
        decipher.setAuthTag(Buffer.from(sealed.Tag, 'base64'));
        const plain = Buffer.concat([decipher.update(Buffer.from(sealed.Data, 'base64')), decipher.final()]);
        return JSON.parse(plain.toString('utf8')) as unknown;
      } catch (err) {
        throw agentError('ACL_NO_SERVER', { detail: 'a sealed reply did not open', cause: err });
      }
    },
  };
}

/** The answerer's side: `value` as JSON, sealed to the asker's public key. */
export function seal(value: unknown, toPublicKey: string): Sealed {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  const ownKey = spkiBase64(publicKey);
  const key = derive(privateKey, importKey(toPublicKey), ownKey);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return {
    Key: ownKey,
    IV: iv.toString('base64'),
    Data: data.toString('base64'),
    Tag: cipher.getAuthTag().toString('base64'),
  };
}

function derive(privateKey: KeyObject, publicKey: KeyObject, salt: string): Buffer {
  const shared = diffieHellman({ privateKey, publicKey });
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from(salt), INFO, 32));
}

function importKey(spki: string): KeyObject {
  return createPublicKey({ key: Buffer.from(spki, 'base64'), format: 'der', type: 'spki' });
}

function spkiBase64(key: KeyObject): string {
  return key.export({ format: 'der', type: 'spki' }).toString('base64');
}
