import { NEWEST } from "../../devkit/kafka/versions.ts";
import { faultSuite } from "./fault-suite.ts";

faultSuite(NEWEST);
