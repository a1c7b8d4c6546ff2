/** The server's own name and version, as the CapabilityStatement and GraphQL report them. */
export const SERVER_NAME = 'Flint';
export const SERVER_VERSION = '0.1.0';
