import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidArgumentError } from '../../core/errors.ts';

/** Where a listing stands: the scope (`s`; 0 where a listing has one) and the last sort key returned in it (`k`). */
export interface ListPosition {
  s: number;
  k: string;
}

export function isListPosition(value: unknown): value is ListPosition {
  return typeof value === 'object' && value !== null && typeof (value as ListPosition).s === 'number' && typeof (value as ListPosition).k === 'string';
}

/** Opaque, tamper-evident pagination cursors: base64url JSON and an HMAC over it. */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(position: unknown): string {
    const body = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  /** @throws InvalidArgumentError when the cursor was not made here or was altered */
  decode<T>(cursor: string, check: (value: unknown) => value is T): T {
    const [body, signature, extra] = cursor.split('.');
    if (!body || !signature || extra !== undefined) throw this.invalid();
    const expected = Buffer.from(this.sign(body));
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

  private sign(body: string): string {
    return createHmac('sha256', this.secret).update(body).digest('base64url').slice(0, 22);
  }

  private invalid(): InvalidArgumentError {
    return new InvalidArgumentError('cursor is not valid: pass back the nextCursor of a previous page unchanged.', 'cursor');
  }
}
