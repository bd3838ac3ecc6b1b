/** The used-up rule's knobs: how a band's seals are cut and what they list. The allocator's TUNING includes them. */
export const SEAL_TUNING = {
  /**
   * Owner identities a seal lists (those with a Released lease in the band). Past this many it lists 'many', and no
   * caller can rely on it: the band is read again (only a pool with a reuse delay has Released leases).
   */
  sealHoldersMax: 32,

  /**
   * Parts a band is sealed in: slices of at least sealPartMin addresses, at most sealParts of them (a band under twice
   * sealPartMin is one part). Callers deciding at once each read a part no seal covers yet, chosen at random among
   * them, and skip what others sealed meanwhile, so a band used up is read about once, not once per caller. More parts
   * mean a larger seals item (each seal about 150 bytes, 32 of them about 5 KB: 2 read units instead of 1) and more
   * seal writes.
   */
  sealParts: 32,
  sealPartMin: 128n,
} as const;
