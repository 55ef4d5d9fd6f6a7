/** A worker entry that fails as it loads, for the test that a server will not start on it. */
throw new Error("this worker cannot load its code");
