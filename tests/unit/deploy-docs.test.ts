import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cfnSchemaProblems, type CfnResource } from '../support/cfn-schema.ts';
import { CROSSING_DETAIL_TYPE, CROSSING_SOURCE, crossingDetail } from '../../shared/adapters/crossing-events.ts';

// The CloudFormation a user is told to paste (docs/deploy.md, "Warnings before a pool runs out") against
// CloudFormation's resource schemas, as the packaged template is (tests/unit/template.test.ts).

describe('docs/deploy.md: the worked alarm and event rule (issue 37)', () => {
  it('are resources CloudFormation knows, every property spelt and typed as its schema says', async () => {
    // Prepare: the YAML blocks of the section, beside the stage's alarm topic they refer to
    const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const section = doc.slice(
      doc.indexOf('## Warnings before a pool runs out'),
      doc.indexOf('## How many allocations a second'),
    );
    const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)\n```/g)].map(
      (m) => parse(m[1]!) as Record<string, CfnResource>,
    );
    const resources: Record<string, CfnResource> = Object.assign(
      { AlarmTopic: { Type: 'AWS::SNS::Topic', Properties: {} } },
      ...blocks,
    );
    // Act
    const problems = await cfnSchemaProblems({ Resources: resources });
    // Assess
    expect(Object.keys(resources).sort()).toEqual([
      'AlarmTopic',
      'AlarmTopicAcceptsEvents',
      'PodsFreeSpaceAlarm',
      'PoolCrossingsToAlarmTopic',
      'PoolCrossingsToSlack',
      'SlackWebhook',
      'SlackWebhookConnection',
      'SlackWebhookInvoker',
    ]);
    expect(problems).toEqual([]);
    expect(resources.PoolCrossingsToAlarmTopic!.Properties!.EventPattern as Record<string, unknown>).toMatchObject({
      source: [CROSSING_SOURCE],
      'detail-type': [CROSSING_DETAIL_TYPE],
    });
    expect(resources.PodsFreeSpaceAlarm!.Properties!.MetricName).toBe('PoolFreePercent');
  });

  it("routes crossings to Slack with a transformer that reads only fields the event's detail has (issue 37)", () => {
    // Prepare
    const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const section = doc.slice(
      doc.indexOf('## Warnings before a pool runs out'),
      doc.indexOf('## How many allocations a second'),
    );
    const resources: Record<string, CfnResource> = Object.assign(
      {},
      ...[...section.matchAll(/```yaml\n([\s\S]*?)\n```/g)].map((m) => parse(m[1]!) as Record<string, CfnResource>),
    );
    const rule = resources.PoolCrossingsToSlack!.Properties!;
    const target = (
      rule.Targets as { InputTransformer: { InputPathsMap: Record<string, string>; InputTemplate: string } }[]
    )[0]!;
    const detail = crossingDetail(
      {
        pool: 'pods',
        family: 'IPv4',
        direction: 'below',
        threshold: 10,
        size: 254n,
        free: 25n,
        freePercent: 9.84,
        time: '2026-11-27T22:40:00.000Z',
      },
      'prod',
    );
    // Act
    const paths = Object.values(target.InputTransformer.InputPathsMap).map((p) => p.replace(/^\$\.detail\./, ''));
    const placeholders = [...target.InputTransformer.InputTemplate.matchAll(/<(\w+)>/g)].map((m) => m[1]!);
    // Assess: every path is a field of the detail, every placeholder is mapped, and the template is JSON once filled
    expect(paths.filter((p) => !(p in detail))).toEqual([]);
    expect(placeholders.filter((p) => !(p in target.InputTransformer.InputPathsMap))).toEqual([]);
    expect(rule.EventPattern).toMatchObject({ source: [CROSSING_SOURCE], 'detail-type': [CROSSING_DETAIL_TYPE] });
    const filled = target.InputTransformer.InputTemplate.replace(/<(\w+)>/g, (_, name: string) =>
      String(detail[target.InputTransformer.InputPathsMap[name]!.replace(/^\$\.detail\./, '')]),
    );
    expect(JSON.parse(filled)).toEqual({
      text: 'IPAM ${sls:stage}: pool pods, IPv4 below 10 (% free); 25 of 254 addresses free',
    });
  });
});
