import type { _Record as SdkRecord, AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';

/** Converts an SDK stream record into the shape Lambda delivers (lower-case userIdentity, epoch seconds, base64 binaries). */
export function toLambdaRecord(record: SdkRecord, streamArn: string, region: string): DynamoDBRecord {
  const data = record.dynamodb ?? {};
  const out: DynamoDBRecord = {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: region,
    dynamodb: {
      ApproximateCreationDateTime:
        data.ApproximateCreationDateTime === undefined
          ? undefined
          : Math.floor(data.ApproximateCreationDateTime.getTime() / 1000),
      Keys: data.Keys && toLambdaImage(data.Keys),
      NewImage: data.NewImage && toLambdaImage(data.NewImage),
      OldImage: data.OldImage && toLambdaImage(data.OldImage),
      SequenceNumber: data.SequenceNumber,
      SizeBytes: data.SizeBytes,
      StreamViewType: data.StreamViewType,
    },
    eventSourceARN: streamArn,
  };
  if (record.userIdentity)
    out.userIdentity = { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId };
  return out;
}

function toLambdaImage(image: Record<string, SdkAttributeValue>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([name, value]) => [name, toLambdaValue(value)]));
}

function toLambdaValue(value: SdkAttributeValue): AttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (value.L !== undefined) return { L: value.L.map(toLambdaValue) };
  if (value.M !== undefined) return { M: toLambdaImage(value.M) };
  return value as AttributeValue;
}
