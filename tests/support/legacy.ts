import { expect } from 'vitest';
import type { Container } from '../../shared/adapters/composition.ts';
import { createMirrorHandler } from '../../shared/adapters/stream/mirror-handler.ts';
import { addressOfBit, Bitmap, bitOf, legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { formatAddress, parseAddress } from '../../shared/core/ip/address.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import type { TestApi } from './api.ts';
import type { MirrorHandler } from './stream.ts';

/** The stream function of a container, as Lambda would call it; failures it logs are collected, not printed. */
export function mirrorOf(container: Container, logged: Record<string, unknown>[] = []): MirrorHandler {
  return createMirrorHandler(
    () => container.mirror,
    (entry) => logged.push(entry),
  );
}

/** The addresses a stored bitmap marks as held, sorted; undefined when there is no bitmap item. */
export async function bitmapHolds(
  container: Container,
  pool: string,
  rangeName: string,
): Promise<{ range: string; version: number; addresses: string[] } | undefined> {
  const doc = await container.stores.bitmaps.getBitmap(pool, rangeName);
  if (!doc) return undefined;
  const cidr = parseCidr(doc.range);
  const bitmap = Bitmap.decode(doc.data, legacyWindow(cidr));
  return {
    range: doc.range,
    version: doc.version,
    addresses: [...bitmap.setBits()]
      .map((bit) => formatAddress({ family: cidr.family, value: addressOfBit(cidr, bit) }))
      .sort(),
  };
}

/** Every held address of a pool through the HTTP API, sorted. */
export async function leasedAddresses(api: TestApi, pool: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.call(
      'GET',
      `/v1/pools/${pool}/addresses?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(page.status).toBe(200);
    for (const item of page.body.items ?? []) out.push(item.address as string);
    cursor = page.body.nextCursor as string | undefined;
  } while (cursor);
  return out.sort();
}

/** The addresses among `addresses` that the legacy bitmap of `cidr` covers, sorted. */
export function inWindow(cidr: string, addresses: readonly string[]): string[] {
  const parsed = parseCidr(cidr);
  return addresses
    .filter((a) => {
      const address = parseAddress(a);
      return address.family === parsed.family && bitOf(parsed, address.value) !== undefined;
    })
    .sort();
}

export const owner = (uid: string) => ({ kind: 'Pod', name: `pod-${uid}`, uid });
