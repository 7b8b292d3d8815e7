#!/usr/bin/env python3
"""Fine-tuning, as Caffe's fine-tuning example: a trained LeNet gets a new last layer (ip2 is
replaced by ip2-ft, whose name matches no trained layer, so it starts from its filler) and is
trained further next to the same net trained from scratch. The copied layers learn ten times
slower than the new one. After a few iterations the fine-tuned net is far ahead.

    PYTHONPATH=build/python examples/python/finetune_lenet.py [--weights W] [--iters N]
"""
import argparse
import os

import numpy as np

import crema as caffe
from crema import layers as L, params as P


def lenet(lmdb, batch_size, base_lr_mult):
    """LeNet over an LMDB, with the new last layer; the other layers' rates are scaled by
    base_lr_mult (weights, then biases at twice the rate, as Caffe's recipe)."""
    old = [dict(lr_mult=base_lr_mult), dict(lr_mult=2 * base_lr_mult)]
    new = [dict(lr_mult=1), dict(lr_mult=2)]
    n = caffe.NetSpec()
    n.data, n.label = L.Data(batch_size=batch_size, backend=P.Data.LMDB, source=lmdb,
                             transform_param=dict(scale=1. / 255), ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20, param=old,
                            weight_filler=dict(type="xavier"))
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50, param=old,
                            weight_filler=dict(type="xavier"))
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.ip1 = L.InnerProduct(n.pool2, num_output=500, param=old, weight_filler=dict(type="xavier"))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n["ip2-ft"] = L.InnerProduct(n.relu1, num_output=10, param=new,
                                 weight_filler=dict(type="xavier"))
    n.loss = L.SoftmaxWithLoss(n["ip2-ft"], n.label)
    n.accuracy = L.Accuracy(n["ip2-ft"], n.label, include=dict(phase=caffe.TEST))
    return n.to_proto()


def make_solver(folder, train_lmdb, test_lmdb, base_lr_mult, test_iter):
    train = os.path.join(folder, "finetune_train.prototxt")
    test = os.path.join(folder, "finetune_test.prototxt")
    with open(train, "w") as f:
        f.write(str(lenet(train_lmdb, 64, base_lr_mult)))
    with open(test, "w") as f:
        f.write(str(lenet(test_lmdb, 100, base_lr_mult)))
    solver = os.path.join(folder, "finetune_solver.prototxt")
    with open(solver, "w") as f:
        f.write('train_net: "%s"\ntest_net: "%s"\ntest_iter: %d\ntest_interval: 100000\n'
                'base_lr: 0.01\nmomentum: 0.9\nweight_decay: 0.0005\nlr_policy: "fixed"\n'
                'display: 0\nmax_iter: 100000\nrandom_seed: 1\nsnapshot_prefix: "%s"\n'
                % (train, test, test_iter, os.path.join(folder, "finetune")))
    return caffe.SGDSolver(solver)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights",
                        default="models/lenet_fashion/snapshots/lenet_iter_10000.caffemodel")
    parser.add_argument("--train-lmdb", default="data/fashion_mnist/fashion_mnist_train_lmdb")
    parser.add_argument("--test-lmdb", default="data/fashion_mnist/fashion_mnist_test_lmdb")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--test-iter", type=int, default=20, help="test batches of 100")
    parser.add_argument("--out", default="guide/finetune")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    finetuned = make_solver(args.out, args.train_lmdb, args.test_lmdb, 0.1, args.test_iter)
    finetuned.net.copy_from(args.weights)  # every layer but ip2-ft
    scratch = make_solver(args.out, args.train_lmdb, args.test_lmdb, 1.0, args.test_iter)
    solvers = [("pretrained", finetuned), ("scratch", scratch)]

    losses = {name: np.zeros(args.iters) for name, _ in solvers}
    for it in range(args.iters):
        for name, solver in solvers:
            solver.step(1)
            losses[name][it] = solver.net.blobs["loss"].data
        if it % 10 == 0 or it == args.iters - 1:
            print("%3d) %s" % (it, ", ".join("%s: loss=%.3f" % (name, losses[name][it])
                                             for name, _ in solvers)))
    for name, solver in solvers:
        accuracy = solver.test_all()[0]["accuracy"]
        print("%s accuracy: %.4f" % (name, accuracy))
    weights = os.path.join(args.out, "lenet_finetuned.caffemodel")
    finetuned.net.save(weights)
    print("wrote", weights)


if __name__ == "__main__":
    main()
