"""Real peer ORBs for tests, run as subprocesses on 127.0.0.1 and stopped by the test.

- peers.omni: omniORBpy (PyPI salome-omniorb) echo server and client, omniNames.
- peers.java_orb: the Java echo server and client (built by .ci/install-peers.sh) for any IDL
  interface, through the DSI/DII, on the jars of any of the Java ORBs below.
- peers.jacorb: JacORB 3.9 (the big-endian interop peer).
- peers.jdk_orbs: the OpenJDK ORB 10.1.3 (WildFly's) and the GlassFish ORB 5.0.0.
- peers.combat: Combat 0.8.1 (Tcl; Debian tcl-combat) echo server and client, with
  peers.combat_interface writing the interface in Combat's interface-repository form.
- peers.jacorb_interface: the interface description (TypeCodes in CDR) and the CDR values that
  pass between pycdr and the Java programs.
- peers.fixtures: pytest fixtures (import the ones a test module uses).
- peers.echo_ops: the echo operations (echo.idl) and their text form for the omniORBpy client.
- peers.process: RunningPeer (.ior .host .port .object_key .corbaloc .pid .stop(), a context
  manager), PeerError / PeerNotInstalled, free_port(), corbaloc().
"""
