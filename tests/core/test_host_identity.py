"""The name a process records as its machine's (job rows, temporary names): the hostname, with the PID namespace
added inside a container that shares the hostname, whose pids mean nothing to the rest of the machine (the real
process in its own namespace: tests/core/test_concurrent_jobs.py)."""

from spokenbench.core.foundation.processes import INIT_PID_NAMESPACE, host_identity, tagged_owner_alive


def test_the_machines_own_pid_namespace_is_the_plain_hostname():
    assert host_identity("lab-7", f"pid:[{INIT_PID_NAMESPACE}]") == "lab-7"


def test_a_pid_namespace_of_its_own_is_added_to_the_hostname():
    assert host_identity("lab-7", "pid:[4026532512]") == "lab-7/pidns4026532512"


def test_without_proc_or_with_an_odd_link_the_hostname_is_kept():
    assert host_identity("lab-7", None) == "lab-7"
    assert host_identity("lab-7", "pid:[x]") == host_identity("lab-7", "net:[4026532512]") == "lab-7"


def test_a_temporary_name_of_a_process_in_another_namespace_is_not_judged_by_its_pid():
    """Only the age can tell whether it was left behind: its pid would be looked up among the wrong processes."""
    assert tagged_owner_alive("lab-7-pidns4026532512.1.ab12.part") is None
