"""A course JupyterHub on one machine: the recipe of docs/teaching.md, as benchmarks/hub_course.py runs it.

* DummyAuthenticator: any user name logs in (a test hub; a real one uses its university's OAuth or LDAP
  authenticator, nothing else here changes);
* SimpleLocalProcessSpawner: each user's JupyterLab is a local process with its own home folder,
  ``$COURSE_HUB_ROOT/home/<user>`` (no system accounts needed);
* the pre-spawn hook gives a user the student course on their first login (``coursekit start --no-lab``,
  from the coursekit installed next to JupyterHub), and later logins keep their work: ``coursekit
  start`` never overwrites a notebook the student changed, and adds what a coursekit upgrade brings;
* the instructor grades every user's folder with one command: ``coursekit grade $COURSE_HUB_ROOT/home``.

Settings from the environment: COURSE_HUB_ROOT (where homes and the hub's state live), COURSE_HUB_PORT
(default 8000), COURSE_HUB_ADMIN_TOKEN (a service token the script uses for the REST API; leave unset
on a hub without scripted users).
"""
import os
import subprocess
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - JupyterHub provides it when it loads this file

root = Path(os.environ["COURSE_HUB_ROOT"])
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(os.environ.get("COURSE_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.db_url = f"sqlite:///{root / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(root / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(root / "jupyterhub-proxy.pid")

c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(root / "home" / "{username}")
c.Spawner.default_url = "/lab/tree/course/notebooks/01_tour.ipynb"
c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120


def give_the_course(spawner):
    """First login: copy the course into the user's home; later logins: add what is new, keep their work."""
    home = Path(spawner.home_dir_template.format(username=spawner.user.name))
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "coursekit", "start", str(home / "course"), "--no-lab"], check=True)


c.Spawner.pre_spawn_hook = give_the_course

token = os.environ.get("COURSE_HUB_ADMIN_TOKEN")
if token:
    c.JupyterHub.services = [{"name": "course-admin", "api_token": token}]
    c.JupyterHub.load_roles = [{"name": "course-admin", "services": ["course-admin"],
                                "scopes": ["admin:users", "admin:servers", "access:servers", "list:users"]}]
