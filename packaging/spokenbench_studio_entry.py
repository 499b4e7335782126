"""The frozen app's entry point (packaging/spokenbench-studio.spec): the desktop app, or with `--cli` as its
first argument the headless runner, so one bundle carries both (`spokenbench-studio --cli demo DIR --report OUT`);
with `--job-host`, a job process of the app's own (long imports run there, off the UI's interpreter)."""

import sys


def _run() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--job-host":  # a job process the app started (core/jobs/host.py)
        from spokenbench.core.jobs.host import main as job_host_main

        return job_host_main()
    if len(sys.argv) > 1 and sys.argv[1] == "--cli":
        from spokenbench.core.cli.main import main as cli_main

        return cli_main(sys.argv[2:])
    from spokenbench.app.main import main

    return main(sys.argv[1:])


if __name__ == "__main__":
    import multiprocessing

    multiprocessing.freeze_support()
    sys.exit(_run())
