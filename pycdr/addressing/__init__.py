"""Where an object is: IIOP profiles and their components, object keys, and
the corbaloc/corbaname URLs that name objects."""
