"""The two JDK-lineage ORBs as test peers: the OpenJDK ORB (com.sun.corba.se, 10.1.3.Final, as
WildFly/JBoss ship it) and the GlassFish/Eclipse ORB (com.sun.corba.ee, 5.0.0), from Maven
Central (tests/peers/openjdk-orb/pom.xml, glassfish-orb/pom.xml; .ci/install-peers.sh fetches
them). They run the same DSI echo server and DII client as JacORB (peers.java_orb).

    from peers.jdk_orbs import OPENJDK_ORB, GLASSFISH_ORB
    from peers.java_orb import start_java_echo_server, call_from_java_orb

    with start_java_echo_server(OPENJDK_ORB, interface) as server:
        call_from_java_orb(GLASSFISH_ORB, server.ior, interface, [("echo_long", (5,))])

Both make GIOP 1.2 IORs with code sets (ISO-8859-1, UTF-16) and marshal big-endian. Their
persistent object keys start with the JDK-lineage magic 0xAFABCB00 and carry the server id.
"""

from peers.java_orb import JavaOrb

# The server id in the persistent object keys (any fixed number: the ORBs require one).
SERVER_ID = "7"

OPENJDK_ORB = JavaOrb(
    name="OpenJDK-ORB", lib="openjdk-orb",
    properties={"org.omg.CORBA.ORBClass": "com.sun.corba.se.impl.orb.ORBImpl",
                "org.omg.CORBA.ORBSingletonClass": "com.sun.corba.se.impl.orb.ORBSingleton",
                # When a read returns part of a message, the ORB sleeps before reading on: 100 ms
                # at first by default (initial:max:header max:backoff %, in ms). A message split
                # in two then costs 100 ms, and the conformance suite's split-every-offset cases
                # over 100 s; 1 ms at first changes nothing else (same verdicts, 23 s).
                "com.sun.CORBA.transport.ORBTCPReadTimeouts": "1:3000:300:20"},
    # The server host is also the only address it listens on.
    listen_properties=lambda host, port: {"com.sun.CORBA.ORBServerHost": host,
                                          "com.sun.CORBA.POA.ORBPersistentServerPort": str(port),
                                          "com.sun.CORBA.POA.ORBServerId": SERVER_ID})

GLASSFISH_ORB = JavaOrb(
    name="GlassFish-ORB", lib="glassfish-orb",
    properties={"org.omg.CORBA.ORBClass": "com.sun.corba.ee.impl.orb.ORBImpl",
                "org.omg.CORBA.ORBSingletonClass": "com.sun.corba.ee.impl.orb.ORBSingleton"},
    listen_properties=lambda host, port: {"com.sun.corba.ee.ORBServerHost": host,
                                          "com.sun.corba.ee.POA.ORBPersistentServerPort": str(port),
                                          "org.omg.CORBA.ORBServerId": SERVER_ID},
    # Its JMX set-up (gmbal 4.1.0) fails on JDK 17 ("No ManagedObjectManagerFactory found"); the
    # switch is read from the JVM's system properties, not from ORB.init's.
    system_properties={"org.omg.CORBA.SkipGmbalInit": "true"})
