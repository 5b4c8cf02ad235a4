"""Real brokers for the broker tests, each started once per test session on free
loopback ports in a temporary directory and stopped by the pid we started:

* ``RabbitMQ``: Debian's ``rabbitmq-server`` (Erlang), with its own ``epmd`` on a free
  port (not the machine's 4369), node name, cookie (``HOME``) and data directory;
* ``Nats``: Debian's ``nats-server`` with JetStream (file store in the directory);
* ``Kafka``: the broker's jars resolved by Maven from ``tests/brokers/kafka-pom.xml``
  (pinned, cached in ``~/.m2``), one combined broker+controller in KRaft mode (no
  ZooKeeper), on Java 17+ (``JAVA_HOME``, ``/usr/lib/jvm/*``, or ``java`` on the PATH).

``stop()`` / ``start()`` kill and restart a broker on the same ports and data (the
kill-and-restart tests); ``kill()`` is SIGKILL. A broker that cannot be found is a skip
with the reason (``Unavailable``). Times in seconds.
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90


class Unavailable(Exception):
    """The broker cannot run on this machine (missing package or Java); ``str()`` why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class BrokerProcess:
    """One broker process in ``workdir``; subclasses give ``argv``/``env`` and the port."""

    name = "broker"

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.port = free_port()

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict:
        return dict(os.environ)

    def prepare(self) -> None:
        """One-time setup before the first start."""

    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def start(self) -> None:
        with open(self.log_path(), "ab") as out:
            self.proc = subprocess.Popen(self.argv(), env=self.env(), cwd=self.workdir, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while not self.ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log_path().read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"{self.name} did not start on port {self.port}:\n{tail}")
            time.sleep(0.2)

    def ready(self) -> bool:
        return _listening(self.port)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        """End the process we started (its group: the broker's own children) and wait."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        deadline = time.monotonic() + 10
        while _listening(self.port) and time.monotonic() < deadline:
            time.sleep(0.1)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


class RabbitMQ(BrokerProcess):
    name = "rabbitmq"

    def __init__(self, workdir: Path):
        if not os.path.exists("/usr/lib/rabbitmq/bin/rabbitmq-server") or not shutil.which("epmd"):
            raise Unavailable("rabbitmq-server is not installed (make test-packages installs it)")
        super().__init__(workdir)
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.node = f"rabbit{uuid.uuid4().hex[:8]}@localhost"
        self.epmd: subprocess.Popen | None = None
        (workdir / "enabled_plugins").write_text("[].\n")
        (workdir / "rabbitmq.conf").write_text(
            f"loopback_users = none\nlisteners.tcp.default = 127.0.0.1:{self.port}\n")

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def env(self) -> dict:
        d = str(self.workdir)
        env = dict(os.environ)
        env.update({
            "HOME": d, "RABBITMQ_NODE_PORT": str(self.port), "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODENAME": self.node, "RABBITMQ_MNESIA_BASE": f"{d}/mnesia", "RABBITMQ_LOG_BASE": f"{d}/log",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{d}/enabled_plugins", "RABBITMQ_CONFIG_FILE": f"{d}/rabbitmq",
            "RABBITMQ_ADVANCED_CONFIG_FILE": f"{d}/advanced.config", "RABBITMQ_CONF_ENV_FILE": f"{d}/rabbitmq-env",
            "RABBITMQ_DIST_PORT": str(self.dist_port), "ERL_EPMD_PORT": str(self.epmd_port),
            "RABBITMQ_PID_FILE": f"{d}/rabbit.pid", "RABBITMQ_LOGS": "-",
        })
        return env

    def argv(self) -> list[str]:
        return ["/usr/lib/rabbitmq/bin/rabbitmq-server"]

    def ready(self) -> bool:
        if not _listening(self.port):
            return False
        try:  # the port opens a moment before the broker accepts AMQP connections
            import pika

            params = pika.URLParameters(self.url)
            params.connection_attempts = 1
            params.socket_timeout = 2
            pika.BlockingConnection(params).close()
            return True
        except Exception:  # noqa: BLE001
            return False

    def start(self) -> None:
        if self.epmd is None or self.epmd.poll() is not None:
            # our own epmd in the foreground (the broker would daemonize one we cannot stop)
            self.epmd = subprocess.Popen([shutil.which("epmd"), "-port", str(self.epmd_port)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
        super().start()

    def shutdown(self) -> None:
        self.stop()
        if self.epmd is not None and self.epmd.poll() is None:
            self.epmd.terminate()
            self.epmd.wait(10)


class Nats(BrokerProcess):
    name = "nats"

    def __init__(self, workdir: Path):
        if not shutil.which("nats-server"):
            raise Unavailable("nats-server is not installed (make test-packages installs it)")
        super().__init__(workdir)

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        return [shutil.which("nats-server"), "-a", "127.0.0.1", "-p", str(self.port), "-js",
                "-sd", str(self.workdir / "jetstream"), "-n", f"test-{self.port}"]

    def shutdown(self) -> None:
        self.stop()


KAFKA_POM = Path(__file__).with_name("kafka-pom.xml")


def find_java() -> str:
    """A Java 17+ ``java``: ``JAVA_HOME``, the newest under ``/usr/lib/jvm``, the PATH.
    Errors: Unavailable."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    candidates += sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    if shutil.which("java"):
        candidates.append(shutil.which("java"))
    found = []
    for java in dict.fromkeys(candidates):
        try:
            out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
        except (OSError, subprocess.TimeoutExpired):
            continue
        version = out.split('"')[1] if '"' in out else ""
        major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else 0
        if major >= 17:
            found.append((major not in (17, 21), java))  # the broker's tested JDKs first
    if found:
        return min(found)[1]
    raise Unavailable("no Java 17+ found (JAVA_HOME, /usr/lib/jvm, PATH): the Kafka tests need one")


def kafka_classpath(workdir: Path) -> str:
    """The Kafka broker's classpath, resolved by Maven from the pinned pom (once; cached
    in ~/.m2). Errors: Unavailable without Maven or when resolution fails."""
    mvn = shutil.which("mvn")
    if not mvn:
        raise Unavailable("Maven (mvn) is not installed: the Kafka tests resolve the broker with it")
    out = workdir / "classpath.txt"
    proc = subprocess.run([mvn, "-q", "-B", "-f", str(KAFKA_POM), "dependency:build-classpath",
                           f"-Dmdep.outputFile={out}"], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not out.exists():
        raise Unavailable(f"could not resolve the Kafka broker with Maven:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return out.read_text().strip()


class Kafka(BrokerProcess):
    name = "kafka"

    def __init__(self, workdir: Path):
        self.java = find_java()
        super().__init__(workdir)
        self.controller_port = free_port()
        self.classpath = kafka_classpath(workdir)
        self.props = workdir / "server.properties"
        logs = workdir / "data"
        self.props.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={logs}", "num.partitions=1", "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
            "auto.create.topics.enable=true", "group.initial.rebalance.delay.ms=0",
            "offsets.topic.num.partitions=1", "log.flush.interval.messages=1",
        ]) + "\n")
        (workdir / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.kafka.server.KafkaServer=INFO\nlog4j.logger.kafka.server.KafkaRaftServer=INFO\n")
        self._java(["kafka.tools.StorageTool", "format", "-t", "Zm9yLXRlc3RzLW9ubHkxMQ", "-c", str(self.props)])

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _base(self) -> list[str]:
        return [self.java, "-Xms128m", "-Xmx384m", "-XX:+UseSerialGC",
                f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}", "-cp", self.classpath]

    def _java(self, args: list[str]) -> None:
        proc = subprocess.run(self._base() + args, capture_output=True, text=True, timeout=300, cwd=self.workdir)
        if proc.returncode != 0:
            raise RuntimeError(f"kafka {' '.join(args[:2])} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")

    def argv(self) -> list[str]:
        return self._base() + ["kafka.Kafka", str(self.props)]

    def ready(self) -> bool:
        if not _listening(self.port):
            return False
        try:
            from confluent_kafka.admin import AdminClient

            AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=3)
            return True
        except Exception:  # noqa: BLE001
            return False

    def shutdown(self) -> None:
        self.stop()
