"""A pycaffe script, written against Caffe's documented Python interface as its examples
(01-learning-lenet, 00-classification) use it, run with crema in Caffe's place. It writes LeNet
with NetSpec, trains it with SGDSolver step by step on Fashion-MNIST, scoring the test net by
hand, saves the weights, and classifies test images read from files with a deploy net and a
Transformer.

usage: pycaffe_lenet.py TRAIN_LMDB TEST_LMDB IMAGE_DIR DEPLOY_PROTOTXT ITERATIONS
IMAGE_DIR holds <index>_<label>.pgm files. Prints "test accuracy: A" after training and
"classified: K of N" at the end.
"""
import os
import sys

import numpy as np

import crema as caffe
from crema import layers as L, params as P

train_lmdb, test_lmdb, image_dir, deploy, niter = sys.argv[1:6]
niter = int(niter)


def lenet(lmdb, batch_size):
    # Caffe's LeNet: a series of linear and simple nonlinear transformations.
    n = caffe.NetSpec()
    n.data, n.label = L.Data(batch_size=batch_size, backend=P.Data.LMDB, source=lmdb,
                             transform_param=dict(scale=1. / 255), ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20, weight_filler=dict(type='xavier'))
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50,
                            weight_filler=dict(type='xavier'))
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.ip1 = L.InnerProduct(n.pool2, num_output=500, weight_filler=dict(type='xavier'))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, num_output=10, weight_filler=dict(type='xavier'))
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    return n.to_proto()


with open('lenet_auto_train.prototxt', 'w') as f:
    f.write(str(lenet(train_lmdb, 64)))
with open('lenet_auto_test.prototxt', 'w') as f:
    f.write(str(lenet(test_lmdb, 100)))
with open('lenet_auto_solver.prototxt', 'w') as f:
    f.write('train_net: "lenet_auto_train.prototxt"\n'
            'test_net: "lenet_auto_test.prototxt"\n'
            'test_iter: 10\ntest_interval: 100000\n'
            'base_lr: 0.01\nmomentum: 0.9\nweight_decay: 0.0005\n'
            'lr_policy: "inv"\ngamma: 0.0001\npower: 0.75\n'
            'display: 100\nmax_iter: 10000\nrandom_seed: 1\n'
            'snapshot_prefix: "lenet"\n')

caffe.set_mode_cpu()
solver = caffe.SGDSolver('lenet_auto_solver.prototxt')
print([(k, v.data.shape) for k, v in solver.net.blobs.items()])
print([(k, v[0].data.shape) for k, v in solver.net.params.items()])

# One forward of each net, then one step, as the tutorial checks its setup.
solver.net.forward()
solver.test_nets[0].forward()
solver.step(1)
print('conv1 gradient magnitude:', np.abs(solver.net.params['conv1'][0].diff).sum())

test_interval = 100
train_loss = np.zeros(niter)
test_acc = np.zeros(int(np.ceil(niter / test_interval)) + 1)
for it in range(niter):
    solver.step(1)
    train_loss[it] = solver.net.blobs['loss'].data
    if it % test_interval == 0 or it == niter - 1:
        correct = 0
        for test_it in range(10):
            solver.test_nets[0].forward()
            correct += sum(solver.test_nets[0].blobs['ip2'].data.argmax(1)
                           == solver.test_nets[0].blobs['label'].data)
        test_acc[int(np.ceil(it / test_interval))] = correct / 1e3
        print('Iteration', it, 'testing... accuracy', correct / 1e3, 'loss', train_loss[it])
print('first losses:', train_loss[:5].mean(), 'last losses:', train_loss[-20:].mean())
print('test accuracy:', test_acc[-1])
solver.net.save('lenet_fashion.caffemodel')

# Classification with the deploy net, one image file at a time through a Transformer.
net = caffe.Net(deploy, 'lenet_fashion.caffemodel', caffe.TEST)
net.blobs['data'].reshape(1, 1, 28, 28)
net.reshape()
transformer = caffe.io.Transformer({'data': net.blobs['data'].data.shape})
transformer.set_transpose('data', (2, 0, 1))
files = sorted(os.listdir(image_dir))
right = 0
for name in files:
    image = caffe.io.load_image(os.path.join(image_dir, name), color=False)
    net.blobs['data'].data[...] = transformer.preprocess('data', image)
    output = net.forward()
    label = int(name.split('_')[1].split('.')[0])
    right += int(output['prob'][0].argmax() == label)
print('classified:', right, 'of', len(files))
