#!/bin/sh
# Prints the home of a JDK that can build and run the Java SDK suite: the SDK
# (org.conductoross:conductor-client 6.x) is Java 21 bytecode, so JDK 21 or newer.
# Order: $CONDUCTOR_JAVA_HOME, $JAVA_HOME, then the newest JDK under /usr/lib/jvm.
# Exits 1 (and says so on stderr) when there is none.
major() { sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null; }
ok() { [ -x "$1/bin/javac" ] && v=$(major "$1") && [ -n "$v" ] && [ "$v" -ge 21 ]; }
for candidate in "$CONDUCTOR_JAVA_HOME" "$JAVA_HOME"; do
  if [ -n "$candidate" ] && ok "$candidate"; then echo "$candidate"; exit 0; fi
done
best=""; bestv=0
for candidate in /usr/lib/jvm/*; do
  if ok "$candidate" && [ "$(major "$candidate")" -gt "$bestv" ]; then best=$candidate; bestv=$(major "$candidate"); fi
done
if [ -n "$best" ]; then echo "$best"; exit 0; fi
echo "no JDK 21 or newer found (set CONDUCTOR_JAVA_HOME, or install one under /usr/lib/jvm): the Java SDK 6.x needs it" >&2
exit 1
