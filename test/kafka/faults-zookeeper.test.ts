import { faultSuite } from "./fault-suite.ts";

faultSuite({ version: "3.9.1", mode: "zookeeper", zookeeper: "3.8.4" });
