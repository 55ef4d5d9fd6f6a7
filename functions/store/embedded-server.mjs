import { parentPort, workerData } from "node:worker_threads";
import dynalite from "dynalite";

/**
 * The embedded store's thread: dynalite serving the DynamoDB protocol on loopback. Its request
 * handling has a core of its own, not the service's event loop. Plain JavaScript: a worker thread
 * loads its entry before any loader (tsx) could be registered in it.
 */
const { dataDir, port } = workerData;
const server = dynalite({ path: dataDir, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.once("error", (error) => parentPort?.postMessage({ error: error.message }));
server.listen(port ?? 0, "127.0.0.1", () => {
  parentPort?.postMessage({ port: server.address().port });
});
parentPort?.on("message", (message) => {
  if (message !== "close") return;
  server.closeAllConnections?.();
  server.close(() => parentPort?.postMessage("closed"));
});
