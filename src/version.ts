// The agent's version, as package.json states it (a unit test keeps the two equal).
export const VERSION = '0.1.0';
