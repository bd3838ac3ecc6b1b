import { CLAIM_ATTRIBUTES, CLAIM_PROPERTIES } from '../../shared/core/use-cases/claim-resource.ts';
import type { CustomTypeSchema, PropertyType } from './cfn-schema.ts';

const string: PropertyType = { type: 'string' };
const strings: PropertyType = { type: 'array', element: string };
const types: Record<(typeof CLAIM_PROPERTIES)[number], PropertyType> = {
  ServiceToken: string,
  ServiceTimeout: { type: 'integer' },
  Pool: string,
  Name: string,
  Count: { type: 'integer' },
  IpFamilyPolicy: string,
  IpFamilies: strings,
  Prefixes: strings,
  Addresses: strings,
  Labels: { type: 'map', element: string },
};

/** `Custom::IpamClaim` as the provider reads it (use-cases/claim-resource.ts), for cfnSchemaProblems. */
export const ipamClaimSchema: Record<string, CustomTypeSchema> = {
  'Custom::IpamClaim': {
    properties: Object.fromEntries(
      CLAIM_PROPERTIES.map((p) => [p, { type: types[p], required: p === 'ServiceToken' || p === 'Pool' }]),
    ),
    attributes: CLAIM_ATTRIBUTES,
  },
};
