import { loadConfig } from '../shared/config.ts';
import { buildContainer, type Container } from '../shared/adapters/composition.ts';
import { createMirrorHandler } from '../shared/adapters/stream/mirror-handler.ts';

// Built once per warm container, on first use, so a bad setting fails at cold start with a clear message.
let container: Container | undefined;
const get = (): Container => (container ??= buildContainer(loadConfig()));

/** Stream entry: mirrors lease changes into the legacy bitmaps, reporting partial batch failures per bitmap. */
export const handler = createMirrorHandler(() => get().mirror);
