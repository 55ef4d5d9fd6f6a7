import { createPacerApp } from "./pacer-app.ts";

/**
 * `npx cdk synth` / `npx cdk deploy`. The account and region come from `-c account=… -c region=…` or the
 * CLI's credentials; the explicit env lets synth run offline.
 */
createPacerApp();
