"""The security settings of the secured scenarios, from the environment.

internal/interop/security_clients_test.go sets them:

    RUNNEL_INTEROP_SASL_MECHANISM   PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    RUNNEL_INTEROP_SASL_USERNAME, RUNNEL_INTEROP_SASL_PASSWORD
    RUNNEL_INTEROP_SSL_CAFILE       the CA that signed the node's certificate (PEM)
    RUNNEL_INTEROP_EXPECT           ok, or auth-failure (the password is wrong)
"""

import os


class Settings:
    def __init__(self):
        self.mechanism = _get("SASL_MECHANISM")
        self.username = _get("SASL_USERNAME")
        self.password = _get("SASL_PASSWORD")
        self.cafile = _get("SSL_CAFILE")
        self.expect = _get("EXPECT")
        if self.expect not in ("ok", "auth-failure"):
            raise ValueError("RUNNEL_INTEROP_EXPECT=%r: want ok or auth-failure" % self.expect)


def _get(name):
    key = "RUNNEL_INTEROP_" + name
    if key not in os.environ:
        raise KeyError(key + " is not set")
    return os.environ[key]


def read():
    return Settings()
