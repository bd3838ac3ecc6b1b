import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as StreamAttributeValue } from '@aws-sdk/client-dynamodb-streams';
import { toLambdaRecord } from '../../aws-emulation/lambda-records.ts';

const streamArn = 'arn:aws:dynamodb:ddblocal:000000000000:table/ipam-local/stream/2026-11-21T00:00:00.000';

describe('Function: toLambdaRecord', () => {
  it('gives a TTL deletion the lower-case userIdentity Lambda delivers', () => {
    // Act
    const record = toLambdaRecord(
      {
        eventID: 'e1',
        eventName: 'REMOVE',
        eventVersion: '1.1',
        eventSource: 'aws:dynamodb',
        awsRegion: 'ddblocal',
        userIdentity: { Type: 'Service', PrincipalId: 'dynamodb.amazonaws.com' },
        dynamodb: {
          ApproximateCreationDateTime: new Date('2026-11-21T12:00:00.900Z'),
          Keys: { PK: { S: 'LEASE#p#10.0.0.1' }, SK: { S: 'LEASE' } },
          OldImage: { PK: { S: 'LEASE#p#10.0.0.1' }, SK: { S: 'LEASE' }, ttl: { N: '1795258800' } },
          SequenceNumber: '000000000000000000042',
          SizeBytes: 80,
          StreamViewType: 'NEW_AND_OLD_IMAGES',
        },
      },
      streamArn,
      'us-east-1',
    );
    // Assess
    expect(record).toEqual({
      eventID: 'e1',
      eventName: 'REMOVE',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      eventSourceARN: streamArn,
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
      dynamodb: {
        ApproximateCreationDateTime: 1795262400,
        Keys: { PK: { S: 'LEASE#p#10.0.0.1' }, SK: { S: 'LEASE' } },
        NewImage: undefined,
        OldImage: { PK: { S: 'LEASE#p#10.0.0.1' }, SK: { S: 'LEASE' }, ttl: { N: '1795258800' } },
        SequenceNumber: '000000000000000000042',
        SizeBytes: 80,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    });
  });

  it('writes binary values as base64 text, also inside lists and maps', () => {
    // Prepare
    const bytes = Uint8Array.from([0, 1, 254, 255]);
    const image: Record<string, StreamAttributeValue> = {
      B: { B: bytes },
      BS: { BS: [bytes] },
      L: { L: [{ B: bytes }, { S: 'x' }] },
      M: { M: { inner: { B: bytes }, n: { N: '7' } } },
    };
    // Act
    const record = toLambdaRecord({ eventName: 'INSERT', dynamodb: { NewImage: image } }, streamArn, 'us-east-1');
    // Assess
    expect(record.userIdentity).toBeUndefined();
    expect(record.dynamodb?.NewImage).toEqual({
      B: { B: 'AAH+/w==' },
      BS: { BS: ['AAH+/w=='] },
      L: { L: [{ B: 'AAH+/w==' }, { S: 'x' }] },
      M: { M: { inner: { B: 'AAH+/w==' }, n: { N: '7' } } },
    });
  });
});

describe('Sample event: events/stream-batch.json', () => {
  const event = JSON.parse(
    readFileSync(new URL('../../events/stream-batch.json', import.meta.url), 'utf8'),
  ) as DynamoDBStreamEvent;

  it('has a lease INSERT, a REMOVE and a TTL removal, in sequence order', () => {
    // Act
    const kinds = event.Records.map(
      (r) => `${r.eventName}${r.userIdentity?.principalId === 'dynamodb.amazonaws.com' ? ' (ttl)' : ''}`,
    );
    // Assess
    expect(kinds).toEqual(['INSERT', 'REMOVE', 'REMOVE (ttl)']);
    const sequence = event.Records.map((r) => BigInt(r.dynamodb!.SequenceNumber!));
    expect(sequence).toEqual([...sequence].sort((a, b) => (a < b ? -1 : 1)));
    expect(event.Records[2]!.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
  });

  it('carries lease items whose keys agree with their attributes', () => {
    for (const record of event.Records) {
      // Act
      const image = unmarshall(
        (record.dynamodb!.NewImage ?? record.dynamodb!.OldImage)! as Parameters<typeof unmarshall>[0],
      );
      const keys = unmarshall(record.dynamodb!.Keys! as Parameters<typeof unmarshall>[0]);
      // Assess
      expect(image).toMatchObject({ entity: 'lease', SK: 'LEASE', PK: `LEASE#${image.pool}#${image.address}` });
      expect(keys).toEqual({ PK: image.PK, SK: image.SK });
      expect(['IPv4', 'IPv6']).toContain(image.family);
      expect(new Date(image.createdAt as string).toISOString()).toBe(image.createdAt);
      for (const name of ['range', 'claim', 'claimUid', 'ownerUid']) expect(typeof image[name]).toBe('string');
    }
  });
});
