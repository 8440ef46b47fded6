"""The JaCoCo agent (tests/peers/jacoco/pom.xml; .ci/install-peers.sh copies its runtime jar into
.peers/jacoco/lib) on a Java ORB peer: its tcpserver output on a port the test picks.

    from peers.jacoco import agent_option
    start_java_echo_server(JACORB, interface, jvm_options=[agent_option(port)])
"""

import glob
import os

from peers.java_orb import PEERS_HOME
from peers.process import LOOPBACK, PeerNotInstalled


def agent_jar():
    """The agent's runtime jar; PeerNotInstalled when it was not fetched."""
    jars = glob.glob(os.path.join(PEERS_HOME, "jacoco", "lib", "org.jacoco.agent-*-runtime.jar"))
    if not jars:
        raise PeerNotInstalled("the JaCoCo agent is not installed: run .ci/install-peers.sh")
    return jars[0]


def agent_option(port, includes="org.jacorb.*:com.sun.corba.*"):
    """-javaagent: the agent answering dump/reset commands on 127.0.0.1:`port`, counting the
    probes of the classes `includes` names (the ORBs'; not the JDK's nor the test programs')."""
    return (f"-javaagent:{agent_jar()}=output=tcpserver,address={LOOPBACK},port={port},"
            f"includes={includes}")
