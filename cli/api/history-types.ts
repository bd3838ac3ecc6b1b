/** One holding of an address, as GET .../history answers it (openapi.yaml: Holding). */
export interface Holding {
  readonly address: string;
  readonly family: string;
  readonly range: string;
  /** `claim`: a claim held it; `hold`: a reuse delay held it for the previous owner identity. */
  readonly kind: 'claim' | 'hold';
  readonly claim: string;
  readonly claimUid?: string;
  readonly owner: { readonly kind: string; readonly name: string; readonly uid: string };
  readonly from: string;
  /** Absent while the holding lasts. */
  readonly to?: string;
  /** false: `to` is an upper bound (a client's release). */
  readonly toExact?: boolean;
  readonly endReason?: string;
  readonly expiresAt?: string;
}

export interface HoldingPage {
  readonly items: readonly Holding[];
  readonly nextCursor?: string;
  readonly completeUntil?: string;
}

export interface HoldingAt {
  readonly at: string;
  readonly holding: Holding | null;
  readonly completeUntil?: string;
}
