// The agent's version, as package.json states it (a unit test keeps the two equal).
export const VERSION = '0.1.0';

/**
 * The Consul release whose HTTP API the agent matches: reported as Config.Version in
 * /v1/agent/self, where Consul clients read it to gate features (README, "For Consul users").
 */
export const CONSUL_API_VERSION = '1.17.0';
