#!/usr/bin/env bash
# A Spark 3.1 standalone cluster on 127.0.0.1 started with plain `java` (no Spark scripts): one master and
# N workers of one core each. The multi-JVM integration test (StandaloneClusterIT) drives exactly this script.
#
#   local-spark-cluster.sh start  DIR [WORKERS]   start master + workers (default 2); prints the master URL
#   local-spark-cluster.sh submit DIR ARGS...     spark-submit ARGS to it (client mode, Java 17 flags added)
#   local-spark-cluster.sh stop   DIR             stop the executors, workers and master started from DIR
#   local-spark-cluster.sh clean  DIR             delete the applications' copies in the worker directories
#
# Spark's jars come from $SPARK_HOME/jars (a Spark 3.1.x / Scala 2.12 distribution whose scala-library is
# 2.12.15 or later), or from SPARK_CLASSPATH_FILE: a ':'-separated class path, as the Maven build writes it to
# spark-scaleout/target/spark-classpath.txt. Environment: JAVA_HOME (else `java` on the PATH),
# WORKER_MEMORY (default 1500m), SPARK_DAEMON_MEMORY (default 256m).
set -euo pipefail

cmd=${1:-}; dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
  sed -n '2,15p' "$0"; exit 2
fi
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

# Spark 3.1 on Java 17 needs these opens in every JVM; gradient sharing needs the Aeron timeout.
JAVA17_OPENS="--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.invoke=ALL-UNNAMED \
--add-opens=java.base/java.lang.reflect=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
--add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED \
--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED \
--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
--add-opens=java.base/sun.nio.cs=ALL-UNNAMED --add-opens=java.base/sun.security.action=ALL-UNNAMED \
--add-opens=java.base/sun.util.calendar=ALL-UNNAMED -Daeron.publication.unblock.timeout=60000000000"

spark_home() {
  if [[ -n "${SPARK_CLASSPATH_FILE:-}" ]]; then
    # Workers build each executor's class path from $SPARK_HOME/jars: lay the Maven class path out that way.
    local home=$dir/spark-home
    rm -rf "$home/jars"; mkdir -p "$home/jars"
    tr ':' '\n' < "$SPARK_CLASSPATH_FILE" | while read -r jar; do
      [[ "$jar" == *.jar ]] && ln -sf "$jar" "$home/jars/$(basename "$jar")"
    done
    echo "$home"
  elif [[ -n "${SPARK_HOME:-}" && -d "$SPARK_HOME/jars" ]]; then
    echo "$SPARK_HOME"
  else
    echo "set SPARK_HOME (a Spark 3.1 distribution) or SPARK_CLASSPATH_FILE" >&2; exit 2
  fi
}

# Daemons started without Spark's scripts must name the Scala version, else every executor launch fails
# with "Cannot find any build directories".
export SPARK_SCALA_VERSION=2.12 SPARK_LOCAL_IP=127.0.0.1

wait_for() { # file pattern seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if grep -q "$2" "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2; return 1
}

case "$cmd" in
  start)
    workers=${3:-2}
    if [[ -s "$dir/pids" ]]; then echo "$dir/pids exists: stop that cluster first" >&2; exit 1; fi
    export SPARK_HOME; SPARK_HOME=$(spark_home)
    : > "$dir/pids"
    mem=${SPARK_DAEMON_MEMORY:-256m}
    $java $JAVA17_OPENS -Xmx"$mem" -cp "$SPARK_HOME/jars/*" org.apache.spark.deploy.master.Master \
      --host 127.0.0.1 --port 0 --webui-port 0 > "$dir/master.log" 2>&1 &
    echo "master $!" >> "$dir/pids"
    wait_for "$dir/master.log" "Starting Spark master at spark://" 60
    url=$(grep -o "spark://127.0.0.1:[0-9]*" "$dir/master.log" | head -1)
    echo "$url" > "$dir/master-url"
    for ((w = 1; w <= workers; w++)); do
      mkdir -p "$dir/worker-$w"
      $java $JAVA17_OPENS -Xmx"$mem" -cp "$SPARK_HOME/jars/*" org.apache.spark.deploy.worker.Worker \
        --host 127.0.0.1 --cores 1 --memory "${WORKER_MEMORY:-1500m}" --webui-port 0 \
        --work-dir "$dir/worker-$w" "$url" > "$dir/worker-$w.log" 2>&1 &
      echo "worker $!" >> "$dir/pids"
    done
    for ((w = 1; w <= workers; w++)); do
      wait_for "$dir/worker-$w.log" "Successfully registered with master" 60
    done
    echo "$url"
    ;;
  submit)
    shift 2
    [[ -s "$dir/master-url" ]] || { echo "no cluster in $dir (run start first)" >&2; exit 1; }
    export SPARK_HOME; SPARK_HOME=$(spark_home)
    # client mode: this JVM is the driver, so its own flags are the driver's
    exec $java $JAVA17_OPENS -Xmx${DRIVER_MEMORY:-1g} -Dorg.bytedeco.javacpp.maxphysicalbytes=3G \
      -cp "$SPARK_HOME/jars/*" org.apache.spark.deploy.SparkSubmit \
      --master "$(cat "$dir/master-url")" --deploy-mode client \
      --conf spark.driver.host=127.0.0.1 \
      --conf "spark.executor.extraJavaOptions=$JAVA17_OPENS -Dorg.bytedeco.javacpp.maxphysicalbytes=2G" \
      "$@"
    ;;
  stop)
    [[ -f "$dir/pids" ]] || exit 0
    # executors are children of their worker: collect them first, then stop workers, then the master
    children=()
    while read -r role pid; do
      if [[ "$role" == worker ]]; then
        for c in $(pgrep -P "$pid" || true); do children+=("$c"); done
      fi
    done < "$dir/pids"
    while read -r role pid; do kill -TERM "$pid" 2>/dev/null || true; done < <(tac "$dir/pids")
    for ((i = 0; i < 100; i++)); do
      alive=0
      while read -r role pid; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$dir/pids"
      for c in "${children[@]}"; do kill -0 "$c" 2>/dev/null && alive=1; done
      [[ $alive == 0 ]] && break
      sleep 0.1
    done
    while read -r role pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$dir/pids"
    for c in "${children[@]}"; do kill -KILL "$c" 2>/dev/null || true; done
    rm -f "$dir/pids" "$dir/master-url"
    ;;
  clean)
    rm -rf "$dir"/worker-*/app-*
    ;;
  *)
    sed -n '2,15p' "$0"; exit 2
    ;;
esac
