/**
 * The SigV4 signer and the credential chain, the CLI's own (cli/api/sigv4.ts), behind one entry the plugin imports
 * only for https endpoints. `npm run build:cni` bundles it separately and embeds it in the plugin as text, compiled on
 * first use: most of the plugin's bytes are the AWS credential providers, and compiling them on every call (http ones
 * included) would cost each pod attach its start-up time.
 */
export { credentialChain, sigV4Signer } from '../cli/api/sigv4.ts';
