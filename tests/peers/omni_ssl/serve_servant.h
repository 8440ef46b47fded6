// Shared by the omniORB C++ peers (tests/peers/omni_ssl, benchmarks/param/omni_cxx): activate
// a servant in the RootPOA, print its IOR and "READY", serve until stdin closes.
#ifndef PYCDR_SERVE_SERVANT_H
#define PYCDR_SERVE_SERVANT_H
#include <omniORB4/CORBA.h>
#include <cstdio>
#include <iostream>
#include <thread>

inline int serve_servant(CORBA::ORB_ptr orb, PortableServer::Servant servant) {
  CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
  PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
  PortableServer::ObjectId_var id = poa->activate_object(servant);
  CORBA::Object_var ref = poa->id_to_reference(id);
  CORBA::String_var ior = orb->object_to_string(ref);
  poa->the_POAManager()->activate();
  std::cout << ior.in() << "\nREADY" << std::endl;
  std::thread([orb]() {
    char buffer[256];
    while (std::fread(buffer, 1, sizeof buffer, stdin) > 0) {}
    orb->shutdown(false);
  }).detach();
  orb->run();
  orb->destroy();
  return 0;
}
#endif
