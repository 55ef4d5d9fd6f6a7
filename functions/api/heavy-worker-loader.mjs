import { workerData } from "node:worker_threads";

/**
 * A worker's entry (offload.ts): the bundled worker code, handed over as text in workerData, loaded
 * from a data: URL, so that no file of code is written anywhere. Plain JavaScript: the worker runs
 * no loader (tsx).
 */
const { default: heavyWorker } = await import(`data:text/javascript;base64,${workerData.bundle}`);
export default heavyWorker;
