/**
 * What every AWS client of the service is built with: three attempts, the function's region, and, where
 * a test points it at a local server of the service's protocol, that endpoint with placeholder
 * credentials.
 */
export function awsClientOptions(localEndpoint: string | undefined) {
  return {
    maxAttempts: 3,
    region: process.env.AWS_REGION ?? "us-east-1",
    ...(localEndpoint
      ? { endpoint: localEndpoint, credentials: { accessKeyId: "local", secretAccessKey: "local" } }
      : {}),
  };
}
