"""Inventory loading through ansible-core: ranges, groups, variables, connection settings,
host patterns, validation, and errors that name the file and line. No network is touched:
every address in the fixtures is a documentation address and nothing connects to it."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchharness.config import inventory as inv_mod
from benchharness.config.inventory import (
    REDACTED,
    connection_fields,
    find_inventory,
    load_inventory,
    local_inventory,
    redact,
    validate_bench_vars,
)
from benchharness.core.errors import ConfigError, UsageError

FIX = Path(__file__).parent / "fixtures" / "inventories"
BAD = FIX / "bad"
REPO_INVENTORIES = Path(__file__).resolve().parent.parent / "inventories"


def names(hosts) -> list[str]:
    return [h.name for h in hosts]


@pytest.fixture(scope="module")
def cluster():
    return load_inventory(FIX / "cluster" / "hosts.ini")


@pytest.fixture(scope="module")
def yamlinv():
    return load_inventory(FIX / "yamlinv" / "hosts.yml")


# ---------------------------------------------------------------- structure


def test_range_expands_to_sixteen_hosts(cluster):
    gpus = [f"gpu{i:02d}" for i in range(1, 17)]
    assert cluster.groups["gpu"] == gpus
    assert names(cluster.hosts) == [*gpus, "st01"]
    assert cluster.groups["rack2"] == gpus[8:]


def test_children_resolve_to_hosts(cluster):
    assert set(cluster.groups["fabric"]) == {f"gpu{i:02d}" for i in range(1, 17)} | {"st01"}
    assert cluster.host("gpu03").groups == ("fabric", "gpu", "rack1")
    assert cluster.host("st01").groups == ("fabric", "storage")
    assert "all" not in cluster.groups and "ungrouped" not in cluster.groups


def test_variable_precedence(cluster):
    g01, g09, g16, st = (cluster.host(n) for n in ("gpu01", "gpu09", "gpu16", "st01"))
    # [rack1:vars] (child) beats [gpu:vars] (parent) beats [all:vars]
    assert g01.var("netdev") == "ens2f0np0"
    assert cluster.host("gpu10").var("netdev") == "ens1f0np0"
    assert st.var("netdev") == "eth0"
    # [all:vars] < group_vars/rack2.yml < host_vars/gpu09.yml
    assert g01.var("nic_line_rate_gbps") == 100
    assert cluster.host("gpu10").var("nic_line_rate_gbps") == 400
    assert g09.var("nic_line_rate_gbps") == 200
    # vars on the host line beat [gpu:vars]
    assert g16.var("netdev") == "ens9"
    assert g16.data_ip == "198.18.1.16" and g09.data_ip == "198.18.1.9"
    assert g01.data_ip is None and g01.traffic_ip == "gpu01"
    # group_vars/all.yml reaches every host; rack2 vars stay in rack2
    assert st.var("gpu_vendor") == "nvidia"
    assert g09.var("gid_index") == 3 and g01.var("gid_index") is None


def test_benchmark_vars_are_typed(cluster):
    g = cluster.host("gpu05")
    assert g.var("gpus") == 8 and type(g.var("gpus")) is int
    assert g.var("rdma_port") == 1 and g.var("rdma_dev") == "mlx5_0"
    # Ansible's bookkeeping variables are not host variables
    assert not {"inventory_hostname", "group_names", "groups", "playbook_dir"} & set(g.vars)


def test_yaml_inventory_with_var_folders(yamlinv):
    assert names(yamlinv.hosts) == ["mi1", "mi2", "mi3", "jump"]
    assert yamlinv.groups == {"amd": ["mi1", "mi2", "mi3"], "mgmt": ["jump"]}
    mi1, mi2, jump = (yamlinv.host(n) for n in ("mi1", "mi2", "jump"))
    assert (mi1.var("gpus"), mi2.var("gpus")) == (8, 4)  # host_vars/mi2.yml wins
    assert mi1.var("gpu_vendor") == "amd" and mi1.var("rdma_dev") == "bnxt_re0"
    assert mi1.var("nic_model") == "Broadcom Thor2 400G" and mi1.user == "bench"
    assert (jump.address, jump.port) == ("192.0.2.10", 2222)
    assert jump.var("gpus") is None
    assert yamlinv.host("mi3").var("bmc_login") == inv_mod.VAULT  # not decrypted, no secret needed


def test_host_vars_are_exactly_the_inventory_variables(cluster):
    assert cluster.host("st01").vars == {
        "ansible_host": "198.18.2.1", "ansible_connection": "local", "ansible_user": "bench",
        "netdev": "eth0", "nic_line_rate_gbps": 100, "gpu_vendor": "nvidia"}


def test_directory_inventory_and_host_port_syntax(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("netdev: eth1\n")
    (tmp_path / "a.ini").write_text("[gpu]\ngpu01:2201\ngpu02 ansible_port=2202\n")
    (tmp_path / "b.yml").write_text("all:\n  hosts:\n    st01:\n")
    inv = load_inventory(tmp_path)
    assert names(inv.hosts) == ["st01", "gpu01", "gpu02"]  # Ansible's order: ungrouped hosts first
    assert (inv.host("gpu01").port, inv.host("gpu02").port, inv.host("st01").port) == (2201, 2202, 22)
    assert inv.host("st01").var("netdev") == "eth1"


def test_group_vars_of_the_current_directory_are_not_read(tmp_path, monkeypatch):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("leaked: 1\n")
    monkeypatch.chdir(tmp_path)
    assert "leaked" not in load_inventory(FIX / "cluster" / "hosts.ini").host("gpu01").vars


# ---------------------------------------------------------------- connection variables


def test_connection_variables(cluster):
    g09, g01, st = cluster.host("gpu09"), cluster.host("gpu01"), cluster.host("st01")
    base = FIX / "cluster"
    assert g09.key_file == str((base / "keys" / "gpu09_ed25519").resolve())  # relative to the inventory
    assert g09.known_hosts == str((base / "known_hosts").resolve())
    assert g09.proxy_jump == "ops@192.0.2.10:2222"
    assert g09.strict_host_keys is False  # accept-new
    assert (g01.proxy_jump, g01.known_hosts, g01.key_file, g01.strict_host_keys) == (None, None, None, True)
    assert (g01.address, g01.port, g01.user, g01.local) == ("gpu01", 22, "bench", False)
    assert st.local is True and st.address == "198.18.2.1"


def where(var: str) -> tuple[str, int | None]:
    return ("inv.ini", 7)


@pytest.mark.parametrize(("args", "expect"), [
    ("-J ops@192.0.2.10", {"proxy_jump": "ops@192.0.2.10"}),
    ("-Jops@192.0.2.10:2222", {"proxy_jump": "ops@192.0.2.10:2222"}),
    ("-oProxyJump=a,b", {"proxy_jump": "a,b"}),
    ("-o 'ProxyJump jump1'", {"proxy_jump": "jump1"}),
    ("-o proxyjump=none", {"proxy_jump": None}),
    ("-o StrictHostKeyChecking=no -o ServerAliveInterval=5 -C", {"strict_host_keys": False}),
    ("-o StrictHostKeyChecking=yes", {"strict_host_keys": True}),
    ("-o UserKnownHostsFile='/etc/lab/kh /dev/null'", {"known_hosts": "/etc/lab/kh"}),
    ("-o UserKnownHostsFile=/dev/null", {"known_hosts": "/dev/null"}),
])
def test_ssh_common_args(args, expect):
    fields = connection_fields("h1", {"ansible_ssh_common_args": args}, Path("/inv"), where)
    for key, value in expect.items():
        assert fields.get(key) == value, key


def test_ssh_args_first_value_wins_as_in_ssh():
    fields = connection_fields("h1", {"ansible_ssh_common_args": "-J first",
                                      "ansible_ssh_extra_args": "-J second -o UserKnownHostsFile=kh"},
                               Path("/inv"), where)
    assert fields["proxy_jump"] == "first" and fields["known_hosts"] == "/inv/kh"


def test_key_file_tilde_expands(monkeypatch):
    monkeypatch.setenv("HOME", "/home/bench")
    fields = connection_fields("h1", {"ansible_ssh_private_key_file": "~/.ssh/id_lab"}, Path("/inv"), where)
    assert fields["key_file"] == "/home/bench/.ssh/id_lab"


@pytest.mark.parametrize(("values", "fragment"), [
    ({"ansible_ssh_common_args": "-F /no/such/ssh_config"}, "ssh config file /no/such/ssh_config (-F) not found"),
    ({"ansible_ssh_extra_args": "-o ServerAliveInterval=often"}, "ServerAliveInterval='often' is not a number"),
    ({"ansible_ssh_common_args": "-o ConnectTimeout=0"}, "ConnectTimeout='0' must be > 0"),
    ({"ansible_ssh_common_args": "-o 'ProxyJump=a"}, "No closing quotation"),
    ({"ansible_ssh_common_args": "-J"}, "-J needs a value"),
    ({"ansible_ssh_common_args": "-o StrictHostKeyChecking=maybe"}, "StrictHostKeyChecking"),
    ({"ansible_connection": "docker"}, "ansible_connection='docker' is not supported"),
    ({"ansible_port": 70000}, "ansible_port=70000"),
    ({"ansible_port": "ssh"}, "ansible_port='ssh'"),
])
def test_bad_connection_variables(values, fragment):
    with pytest.raises(ConfigError) as err:
        connection_fields("h1", values, Path("/inv"), where)
    assert fragment in str(err.value) and "host h1" in str(err.value)
    assert (err.value.path, err.value.line) == ("inv.ini", 7)


# ---------------------------------------------------------------- benchmark variables


@pytest.mark.parametrize(("var", "raw", "value"), [
    ("gpus", "8", 8), ("gpus", 0, 0), ("rdma_port", "1", 1), ("gid_index", 3, 3),
    ("nic_line_rate_gbps", "400", 400), ("nic_line_rate_gbps", "25.78125", 25.78125),
    ("numa_node", -1, -1), ("gpu_vendor", "AMD", "amd"), ("data_ip", "198.18.0.1", "198.18.0.1"),
    ("data_ip", "2001:db8::0:1", "2001:db8::1"), ("nic_serial", 12345, "12345"),
    ("price_usd", "0", 0), ("power_w", 700.5, 700.5), ("netdev", " ens1f0np0 ", "ens1f0np0"),
    ("bench_python", "/opt/venv/bin/python", "/opt/venv/bin/python"), ("bench_netns", "bench-a", "bench-a"),
    ("netdev", None, None),
])
def test_bench_vars_convert(var, raw, value):
    out = validate_bench_vars("h1", {var: raw, "other": [1]}, where)
    assert out[var] == value and type(out[var]) is type(value)
    assert out["other"] == [1]


@pytest.mark.parametrize(("var", "raw"), [
    ("gpus", -1), ("gpus", True), ("gpus", "eight"), ("gpus", 1.5), ("rdma_port", 0),
    ("gid_index", -1), ("nic_line_rate_gbps", 0), ("nic_line_rate_gbps", "nan"), ("gpu_vendor", "intel"),
    ("data_ip", "198.18.0.300"), ("data_ip", "gpu01"), ("netdev", ""), ("rdma_dev", {"a": 1}),
    ("numa_node", -2), ("price_usd", -1), ("mpi_rsh_agent", "a\nb"),
])
def test_bench_vars_reject(var, raw):
    with pytest.raises(ConfigError) as err:
        validate_bench_vars("gpu07", {var: raw}, where)
    assert str(err.value).startswith(f"inv.ini:7: host gpu07: {var}=")


@pytest.mark.parametrize(("source", "path", "line", "fragment"), [
    ("data_ip.ini", "data_ip.ini", 3, "host gpu02: data_ip='198.18.0.300' is not valid, it must be an IP"),
    ("rdma_port.ini", "rdma_port.ini", 5, "host gpu01: rdma_port=0 is not valid, it must be an integer >= 1"),
    ("vendor/hosts.ini", "vendor/group_vars/gpu.yml", 2, "host gpu01: gpu_vendor='intel'"),
    ("ssh_config_missing.ini", "ssh_config_missing.ini", 2, "host gpu01: ssh config file"),
])
def test_validation_errors_name_file_line_host_and_variable(source, path, line, fragment):
    with pytest.raises(ConfigError) as err:
        load_inventory(BAD / source)
    assert err.value.path == str(BAD / path) and err.value.line == line
    assert fragment in str(err.value)
    assert str(err.value).startswith(f"{BAD / path}:{line}: ")


# ---------------------------------------------------------------- malformed sources


@pytest.mark.parametrize(("source", "line", "fragment"), [
    ("vars_no_equals.ini", 6, "Expected key=value, got: netdev eth0"),
    ("section_space.ini", 5, "Invalid section entry: '[rack 1]'"),
    ("section_kind.ini", 3, "Section [gpu:var] has unknown type: var"),
    ("child_undefined.ini", 6, "includes undefined group 'storage'"),
    ("vars_undefined.ini", 5, "Section [gpus:vars] not valid for undefined group 'gpus'"),
    ("range_open.ini", 3, "host range must specify end value"),
    ("host_token.ini", 3, "Expected key=value host variable assignment, got: gpus"),
    ("quote_open.ini", 3, "No closing quotation"),
    ("section_unclosed.ini", 2, "section header '[gpu' has no closing ']'"),
    ("yaml_indent.yml", 4, "YAML syntax error"),
    ("yaml_host_typo.yml", 4, "key 'host' in group 'gpu' is not one of hosts, vars, children"),
    ("yaml_hosts_list.yaml", 4, 'Invalid "hosts" entry for "gpu" group, requires a dictionary, found "list"'),
])
def test_malformed_source_names_file_and_line(source, line, fragment):
    with pytest.raises(ConfigError) as err:
        load_inventory(BAD / source)
    assert (err.value.path, err.value.line) == (str(BAD / source), line)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_line_found_by_quoted_text_when_ansible_gives_none(tmp_path):
    # Older ansible-core, and some messages, carry no line: it is found from the quoted text.
    f = tmp_path / "x.ini"
    f.write_text("[gpu]\n# netdev eth0 in a comment\ngpu01\n[gpu:vars]\nnetdev eth0\n")
    assert inv_mod._line_from_text(str(f), "Expected key=value, got: netdev eth0") == 5
    assert inv_mod._line_from_text(str(f), "Section [gpu:vars] not valid for undefined group 'gpu'") == 4


def test_missing_file_and_unknown_name():
    with pytest.raises(ConfigError) as err:
        load_inventory(BAD / "nope.ini")
    assert err.value.path == str(BAD / "nope.ini") and "not found" in str(err.value)
    with pytest.raises(UsageError, match=r"inventory 'no-such-lab' not found.*known inventories: .*\blab\b"):
        load_inventory("no-such-lab")


def test_inventory_without_hosts_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="defines no hosts") as err:
        load_inventory(BAD / "empty.ini")
    assert err.value.path == str(BAD / "empty.ini")
    (tmp_path / "empty.yml").write_text("")
    with pytest.raises(ConfigError) as err:
        load_inventory(tmp_path / "empty.yml")
    assert err.value.path == str(tmp_path / "empty.yml")


def test_ansible_prints_nothing_and_warnings_are_kept(tmp_path, capfd):
    (tmp_path / "w.ini").write_text("[rack-1]\nn1\n[n1]\nx\n")
    inv = load_inventory(tmp_path / "w.ini")
    with pytest.raises(ConfigError):
        load_inventory(BAD / "vars_no_equals.ini")
    with pytest.raises(ConfigError):
        load_inventory(BAD / "yaml_host_typo.yml")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert any("same name: n1" in w for w in inv.warnings)
    assert len(inv.warnings) == len(set(inv.warnings))


# ---------------------------------------------------------------- host patterns


@pytest.mark.parametrize(("pattern", "expect"), [
    ("all", [f"gpu{i:02d}" for i in range(1, 17)] + ["st01"]),
    ("storage", ["st01"]),
    ("gpu03", ["gpu03"]),
    ("gpu03:gpu01", ["gpu03", "gpu01"]),
    ("gpu03,gpu01", ["gpu03", "gpu01"]),
    ("rack1:!gpu0[2-7]", ["gpu01", "gpu08"]),
    ("gpu:&rack2:!gpu1*", ["gpu09"]),
    ("&rack1:gpu0[8-9]", ["gpu08"]),
    ("gpu0?:&rack2", ["gpu09"]),
    ("~gpu1[45]", ["gpu14", "gpu15"]),
    ("rack2[0]", ["gpu09"]),
    ("rack2[-1]", ["gpu16"]),
    ("rack2[1:2]", ["gpu10", "gpu11"]),
    ("st*", ["st01"]),
])
def test_select_patterns(cluster, pattern, expect):
    assert names(cluster.select(pattern)) == expect


@pytest.mark.parametrize("pattern", [
    "all", "gpu", "rack1:rack2", "gpu:!rack1", "gpu:&rack2", "gpu0*", "fab*:!st01", "~gpu1[0-2]",
    "rack1[1:3]", "rack2[-1]", "gpu16:gpu01:st01", "*", "fabric:&storage", "rack2:gpu01",
])
def test_select_agrees_with_ansible(cluster, pattern):
    from ansible.inventory.manager import InventoryManager  # imported by load_inventory already
    from ansible.parsing.dataloader import DataLoader

    ansible = InventoryManager(DataLoader(), sources=[str(cluster.source)])
    assert names(cluster.select(pattern)) == [h.name for h in ansible.get_hosts(pattern)]


@pytest.mark.parametrize(("pattern", "fragment"), [
    ("gpu01:gpu1O", "'gpu1O' matches no host or group"),
    ("gpu:!gpu99", "'!gpu99' matches no host or group"),
    ("rack1:!rack1", "selects no host"),
    ("~(gpu", "invalid host pattern"),
    ("rack2[9]", "'rack2[9]' matches no host"),
    (" , ", "empty host pattern"),
])
def test_select_errors(cluster, pattern, fragment):
    with pytest.raises(UsageError) as err:
        cluster.select(pattern)
    assert fragment in str(err.value)


def test_select_error_lists_groups_and_hosts(cluster):
    with pytest.raises(UsageError, match=r"groups: gpu, rack1, rack2, fabric, storage; hosts: gpu01, "):
        cluster.select("gpu1O")
    with pytest.raises(UsageError, match="no host 'gpu99'"):
        cluster.host("gpu99")


# ---------------------------------------------------------------- snapshot


def test_snapshot_redacts_secrets(cluster, yamlinv):
    snap = cluster.snapshot()
    json.dumps(snap)  # plain data only
    g09 = next(h for h in snap["hosts"] if h["name"] == "gpu09")
    assert g09["vars"]["ansible_become_password"] == REDACTED
    assert g09["vars"]["data_ip"] == "198.18.1.9" and g09["groups"] == ["fabric", "gpu", "rack2"]
    assert g09["proxy_jump"] == "ops@192.0.2.10:2222" and g09["strict_host_keys"] is False
    assert snap["groups"]["rack1"] == [f"gpu{i:02d}" for i in range(1, 9)]
    assert cluster.host("gpu09").var("ansible_become_password") == "not-a-real-password"  # kept for use
    mi2 = next(h for h in yamlinv.snapshot()["hosts"] if h["name"] == "mi2")
    assert mi2["vars"]["ssh_key_passphrase"] == REDACTED
    assert mi2["vars"]["api"] == {"token": REDACTED, "url": "http://192.0.2.99/"}
    assert "not-a-real" not in json.dumps(yamlinv.snapshot()) + json.dumps(snap)


def test_redact_names():
    secrets = ["ansible_password", "ansible_ssh_pass", "ansible_become_password", "ansible_become_pass",
               "DB_PASSWORD", "vault_secret", "github_token", "key_passphrase"]
    out = redact({**{k: "x" for k in secrets}, "netdev": "eth0", "keys": ["a"]})
    assert all(out[k] == REDACTED for k in secrets)
    assert out["netdev"] == "eth0" and out["keys"] == ["a"]


# ---------------------------------------------------------------- finding inventories


def test_find_inventory_by_name_and_path(tmp_path, monkeypatch):
    lab = (REPO_INVENTORIES / "lab.ini").resolve()
    assert find_inventory("lab") == lab
    assert find_inventory("lab.ini") == lab
    assert find_inventory(str(lab)) == lab
    (tmp_path / "site.yml").write_text("all:\n  hosts:\n    h1:\n")
    (tmp_path / "lab.yaml").write_text("all:\n  hosts:\n    h2:\n")
    assert find_inventory("site", search_dirs=[tmp_path]) == (tmp_path / "site.yml").resolve()
    monkeypatch.setenv("BENCH_INVENTORY_PATH", f"{tmp_path / 'missing'}:{tmp_path}")
    assert find_inventory("lab") == (tmp_path / "lab.yaml").resolve()  # BENCH_INVENTORY_PATH first
    assert find_inventory("site") == (tmp_path / "site.yml").resolve()
    assert names(load_inventory("site").hosts) == ["h1"]


def test_find_inventory_error_lists_known(tmp_path):
    (tmp_path / "alpha.ini").write_text("h1\n")
    (tmp_path / "beta.yml").write_text("all:\n")
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(UsageError) as err:
        find_inventory("gamma", search_dirs=[tmp_path])
    assert "'gamma' not found" in str(err.value)
    assert str(err.value).endswith("known inventories: alpha, beta")


# ---------------------------------------------------------------- the worked example and local


def test_lab_example_loads():
    lab = load_inventory("lab")
    assert names(lab.hosts) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert names(lab.select("nvidia:&rack2")) == ["gpu03", "gpu04"]
    doc_nets = [ipaddress.ip_network("192.0.2.0/24"), ipaddress.ip_network("198.18.0.0/15")]
    for h in lab.hosts:
        assert (h.var("gpus"), h.var("gpu_vendor"), h.var("rdma_dev"), h.var("gid_index")) == (8, "nvidia", "mlx5_0", 3)
        assert h.var("nic_line_rate_gbps") == 400 and h.var("netdev")
        assert h.proxy_jump == "ops@192.0.2.10" and h.user == "bench" and h.strict_host_keys
        assert h.key_file and h.key_file.endswith("/.ssh/id_ed25519_lab") and "~" not in h.key_file
        assert h.data_ip is not None
        for addr in (h.address, h.data_ip, h.proxy_jump.split("@")[1]):
            assert any(ipaddress.ip_address(addr) in net for net in doc_nets), addr
        assert set(h.groups) >= {"b200", "nvidia"} and len(set(h.groups) & {"rack1", "rack2"}) == 1


def test_local_inventory():
    local = local_inventory()
    (h,) = local.select("all")
    assert (h.name, h.address, h.local, h.data_ip, h.var("netdev")) == ("localhost", "127.0.0.1", True, "127.0.0.1", "lo")
    assert h.var("nic_line_rate_gbps") is None and local.source is None
    assert local.host("localhost") is h and local.snapshot()["source"] is None


def test_256_hosts_load_fast(tmp_path):
    # CPU time, not wall time: the suite shares 2 cores. One load is about 0.15 s here.
    (tmp_path / "big.ini").write_text("[gpu]\ngpu[001:256] gpus=8\n[gpu:vars]\nnetdev=eth0\n"
                                      "[rack1]\ngpu[001:128]\n[rack2]\ngpu[129:256]\n")
    load_inventory(tmp_path / "big.ini")  # first load also imports lazily loaded plugins
    start = time.process_time()
    big = load_inventory(tmp_path / "big.ini")
    assert len(big.hosts) == 256 and big.host("gpu256").var("gpus") == 8
    assert time.process_time() - start < 1.0


def test_strict_even_if_ansible_was_imported_first(monkeypatch):
    # Another module (or a test) may import ansible before us, with Ansible's lenient defaults.
    import ansible.constants as constants

    monkeypatch.setattr(constants, "INVENTORY_ENABLED", ["host_list", "script", "auto", "yaml", "ini", "toml"])
    monkeypatch.setattr(constants, "INVENTORY_ANY_UNPARSED_IS_FAILED", False)
    monkeypatch.setattr(constants, "INVENTORY_UNPARSED_IS_FAILED", False)
    inv_mod._ansible.cache_clear()
    try:
        with pytest.raises(ConfigError) as err:
            load_inventory(BAD / "section_kind.ini")
        assert err.value.line == 3
    finally:
        inv_mod._ansible.cache_clear()


def test_fresh_process_prints_nothing(tmp_path):
    # A world-writable directory with an ansible.cfg makes ansible warn while it imports.
    tmp_path.chmod(0o777)
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    code = ("from benchharness.config.inventory import load_inventory\n"
            "from benchharness.core.errors import ConfigError\n"
            f"load_inventory({str(REPO_INVENTORIES / 'lab.ini')!r})\n"
            "try:\n"
            f"    load_inventory({str(BAD / 'yaml_hosts_list.yaml')!r})\n"
            "except ConfigError:\n"
            "    print('ConfigError', end='')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO_INVENTORIES.parent)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ConfigError", "")
