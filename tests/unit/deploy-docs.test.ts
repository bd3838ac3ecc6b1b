import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cfnSchemaProblems, type CfnResource } from '../support/cfn-schema.ts';
import { CROSSING_DETAIL_TYPE, CROSSING_SOURCE } from '../../shared/adapters/crossing-events.ts';

// The CloudFormation a user is told to paste (docs/deploy.md, "Warnings before a pool runs out") against
// CloudFormation's resource schemas, as the packaged template is (tests/unit/template.test.ts).

describe('docs/deploy.md: the worked alarm and event rule (issue 37)', () => {
  it('are resources CloudFormation knows, every property spelt and typed as its schema says', async () => {
    // Prepare: the YAML blocks of the section, beside the stage's alarm topic they refer to
    const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Warnings before a pool runs out'), doc.indexOf('## How many allocations a second'));
    const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)\n```/g)].map((m) => parse(m[1]!) as Record<string, CfnResource>);
    const resources: Record<string, CfnResource> = Object.assign({ AlarmTopic: { Type: 'AWS::SNS::Topic', Properties: {} } }, ...blocks);
    // Act
    const problems = await cfnSchemaProblems({ Resources: resources });
    // Assess
    expect(Object.keys(resources).sort()).toEqual(['AlarmTopic', 'AlarmTopicAcceptsEvents', 'PodsFreeSpaceAlarm', 'PoolCrossingsToAlarmTopic']);
    expect(problems).toEqual([]);
    expect((resources.PoolCrossingsToAlarmTopic!.Properties!.EventPattern as Record<string, unknown>)).toMatchObject({ source: [CROSSING_SOURCE], 'detail-type': [CROSSING_DETAIL_TYPE] });
    expect(resources.PodsFreeSpaceAlarm!.Properties!.MetricName).toBe('PoolFreePercent');
  });
});
