import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Certificates for a test cluster's TLS listeners, made with `openssl` (PEM throughout: Kafka reads PEM
 * key stores from 2.7, and the agent reads PEM only). Each `…Store` file holds a private key (PKCS#8,
 * unencrypted) and its certificate, the form both Kafka's `ssl.keystore.location` with
 * `ssl.keystore.type=PEM` and the agent's take.
 */
export interface TestCertificates {
  /** The CA that signed every certificate below but `otherCa`'s own. */
  ca: string;
  /** A CA that signed nothing here: trusting it alone, no broker can be verified. */
  otherCa: string;
  /** A broker's: SAN 127.0.0.1 and localhost, valid for a year. */
  brokerStore: string;
  /** A broker's without the SAN of any address it listens on (CN kafka.invalid). */
  brokerNoSanStore: string;
  /** A broker's that expired in 2021. */
  brokerExpiredStore: string;
  /** A client's, for listeners with `ssl.client.auth=required`. */
  clientStore: string;
}

export function makeCertificates(dir: string): TestCertificates {
  mkdirSync(dir, { recursive: true });
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });

  /** A new unencrypted RSA key `name.key` and, from it, a request or (with -x509) a certificate at `out`. */
  const newKey = (name: string, subject: string, out: string, ...more: string[]) =>
    openssl(
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      file(`${name}.key`),
      "-out",
      out,
      "-subj",
      subject,
      ...more,
    );
  const makeCa = (name: string, subject: string) => {
    newKey(name, subject, file(`${name}.pem`), "-x509", "-days", "365");
    return file(`${name}.pem`);
  };
  const ca = makeCa("ca", "/CN=leadership-pacer test CA");
  const otherCa = makeCa("other-ca", "/CN=some other CA");

  // `openssl ca` signs with any validity window, past ones included; it wants a database and a config.
  writeFileSync(file("index.txt"), "");
  writeFileSync(file("serial"), "1000\n");
  writeFileSync(
    file("ca.cnf"),
    [
      "[ca]",
      "default_ca = test",
      "[test]",
      `database = ${file("index.txt")}`,
      `serial = ${file("serial")}`,
      `new_certs_dir = ${dir}`,
      `certificate = ${ca}`,
      `private_key = ${file("ca.key")}`,
      "default_md = sha256",
      "policy = anything",
      "unique_subject = no",
      "copy_extensions = copy",
      "[anything]",
      "commonName = supplied",
      "",
    ].join("\n"),
  );

  const signed = (
    name: string,
    subject: string,
    san: string | undefined,
    validity: { startdate: string; enddate: string } | { days: number },
  ) => {
    newKey(name, subject, file(`${name}.csr`), ...(san ? ["-addext", `subjectAltName=${san}`] : []));
    const window =
      "days" in validity
        ? ["-days", String(validity.days)]
        : ["-startdate", validity.startdate, "-enddate", validity.enddate];
    openssl(
      "ca",
      "-batch",
      "-notext",
      "-config",
      file("ca.cnf"),
      "-in",
      file(`${name}.csr`),
      "-out",
      file(`${name}.crt`),
      ...window,
    );
    // PKCS#8 key first, then the certificate: one file for Kafka's PEM key store and for the agent.
    const key = openssl("pkcs8", "-topk8", "-nocrypt", "-in", file(`${name}.key`)).toString();
    const store = file(`${name}-store.pem`);
    writeFileSync(store, `${key}${readFileSync(file(`${name}.crt`), "utf8")}`);
    return store;
  };

  return {
    ca,
    otherCa,
    brokerStore: signed("broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost", { days: 365 }),
    brokerNoSanStore: signed("broker-no-san", "/CN=kafka.invalid", undefined, { days: 365 }),
    brokerExpiredStore: signed("broker-expired", "/CN=localhost", "IP:127.0.0.1,DNS:localhost", {
      startdate: "20200101000000Z",
      enddate: "20210101000000Z",
    }),
    clientStore: signed("client", "/CN=pacer", undefined, { days: 365 }),
  };
}
