import os
print "not tf, never parsed"
