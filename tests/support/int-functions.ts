import { asFunction } from '../../shared/adapters/aws-call-log.ts';

/**
 * The int tier's stand-ins for the deployed functions, for the recording of AWS calls (`npm run record:aws-calls`,
 * AWS_IPAM_CALL_LOG): the API's handler, the stream function's projections and the reconciler each run their calls
 * in the scope of their function; a test's own setup and inspection (tables, direct writes) run in none, and the
 * recording drops them.
 */
export const INT_FUNCTIONS = {
  api: 'ipam-int-api',
  mirror: 'ipam-int-mirror',
  reconciler: 'ipam-int-reconciler',
  claimResource: 'ipam-int-claimResource',
} as const;

/** Runs `work` as one of the int tier's functions (a no-op unless the recording is on). */
export function asIntFunction<T>(key: keyof typeof INT_FUNCTIONS, work: () => T): T {
  return asFunction(INT_FUNCTIONS[key], work);
}
