import tensorflow as tf
print "py2"
