// Outages of 10 s, 60 s and 5 minutes with etcd auth on (the suite: outage-suite.ts).
import { outageSuite } from './outage-suite.js';

outageSuite(true);
