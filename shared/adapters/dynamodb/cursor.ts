import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidArgumentError } from '../../core/errors.ts';

/** Where a listing stands: the scope (`s`; 0 where a listing has one) and the last sort key returned in it (`k`). */
export interface ListPosition {
  s: number;
  k: string;
}

/** A position of the shape every listing writes: `s` a whole number from 0, `k` a string no longer than a sort key. */
export function isListPosition(value: unknown): value is ListPosition {
  if (typeof value !== 'object' || value === null) return false;
  const { s, k } = value as Partial<ListPosition>;
  return typeof s === 'number' && Number.isSafeInteger(s) && s >= 0 && typeof k === 'string' && k.length <= 1024;
}

/** A position of a listing with one scope (pools, claims): `s` is 0. */
export function isSingleScopePosition(value: unknown): value is ListPosition {
  return isListPosition(value) && value.s === 0;
}

/**
 * What a cursor is valid for: the listing that issued it, its pool and its filter, e.g. `['claims', 'p', 'owner-1']`.
 * It is signed with the position, so a cursor of one listing (another route, pool, owner or range) is refused by
 * every other one as not valid (400), instead of reaching DynamoDB as a key it was never meant for.
 */
export type CursorScope = readonly (string | number)[];

/** Opaque, tamper-evident pagination cursors: base64url JSON and an HMAC over it and the listing it belongs to. */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(scope: CursorScope, position: unknown): string {
    const body = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${body}.${this.sign(scope, body)}`;
  }

  /** @throws InvalidArgumentError when the cursor was not made here, for this listing, or was altered */
  decode<T>(scope: CursorScope, cursor: string, check: (value: unknown) => value is T): T {
    const [body, signature, extra] = cursor.split('.');
    if (!body || !signature || extra !== undefined) throw this.invalid();
    const expected = Buffer.from(this.sign(scope, body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw this.invalid();
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw this.invalid();
    }
    if (!check(value)) throw this.invalid();
    return value;
  }

  private sign(scope: CursorScope, body: string): string {
    return createHmac('sha256', this.secret)
      .update(`${JSON.stringify(scope)}\n${body}`)
      .digest('base64url')
      .slice(0, 22);
  }

  private invalid(): InvalidArgumentError {
    return new InvalidArgumentError(
      'cursor is not valid: pass back the nextCursor of a previous page unchanged.',
      'cursor',
    );
  }
}
