"""The CLI (and ``benchwarmers mcp``) finds the server where ``benchwarmers serve`` would listen in
the same environment (issue 31.7): BENCH_PORT and BENCH_BIND read by ``Settings``, as the server
reads them, so a server moved to another port is not mistaken for the one on 8122."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from benchwarmers_mcp.client import DEFAULT_URL, ServerConfig, local_url
from benchwarmers_mcp.settings import BadSettings, Settings

HOME = {"BENCHWARMERS_HOME": "/tmp/bench-home-unused"}


@pytest.mark.parametrize("env", [{}, {"BENCH_PORT": "8133"}, {"BENCH_PORT": " 9001 "},
                                 {"BENCH_BIND": "127.0.0.5", "BENCH_PORT": "8200"}, {"BENCH_BIND": "0.0.0.0"},
                                 {"BENCH_BIND": "::", "BENCH_PORT": "8300"}, {"BENCH_BIND": "::1"}])
def test_the_cli_goes_where_the_server_listens(env: dict[str, str]) -> None:
    server = Settings.from_env({**HOME, **env})
    config = ServerConfig.from_env(env)
    parts = urlsplit(config.url)
    assert parts.port == server.port
    wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1"}
    assert parts.hostname == wildcard.get(server.bind, server.bind)
    assert config.problems == ()


def test_where_it_looked_is_said() -> None:
    assert ServerConfig.from_env({"BENCH_PORT": "8133"}).source == "BENCH_PORT=8133"
    assert ServerConfig.from_env({}).source == "the default" and ServerConfig.from_env({}).url == DEFAULT_URL
    both = ServerConfig.from_env({"BENCHWARMERS_URL": "https://bench.example.com", "BENCH_PORT": "8133"})
    assert (both.url, both.source) == ("https://bench.example.com", "BENCHWARMERS_URL")
    flag = ServerConfig.from_env({"BENCH_PORT": "8133"}, url="http://box:1")
    assert (flag.url, flag.source) == ("http://box:1", "--url")


def test_a_port_the_server_would_refuse_is_refused_in_the_servers_words() -> None:
    with pytest.raises(BadSettings) as server:
        Settings.from_env({**HOME, "BENCH_PORT": "81333"})
    config = ServerConfig.from_env({"BENCH_PORT": "81333"})
    assert config.problems == tuple(server.value.problems)
    assert config.url == DEFAULT_URL


def test_other_server_settings_are_not_the_clients_business() -> None:
    config = ServerConfig.from_env({"BENCH_PORT": "8133", "BENCH_SEAT_TIMEOUT": "soon"})
    assert config.problems == () and config.url == "http://127.0.0.1:8133"


def test_loopback_for_a_wildcard_and_brackets_for_ipv6() -> None:
    assert local_url("0.0.0.0", 1) == "http://127.0.0.1:1"
    assert local_url("::", 2) == "http://[::1]:2"
    assert local_url("[fe80::1]", 3) == "http://[fe80::1]:3"
    assert local_url("10.0.0.2", 4) == "http://10.0.0.2:4"
