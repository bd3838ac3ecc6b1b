/** The executable's entry: `npm run build:cni` bundles this file to dist/cni/ipam-cni. */
import { main } from './main.ts';

void main();
