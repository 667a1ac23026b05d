// The embedded store's public entry: what the rest of the agent may use of src/state/embedded/.
export { openEmbeddedStore, type EmbeddedStore } from './embedded-store.js';
