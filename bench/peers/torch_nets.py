#!/usr/bin/env python3
"""The benchmark nets of bench/models/ in PyTorch, and a timer of whole training steps.

The nets match the Caffe prototxts layer for layer (NCHW): LeNet, CaffeNet (grouped conv2/4/5,
LRN, dropout), VGG-16 (configuration D, dropout after fc6 and fc7), GoogLeNet (with its two
auxiliary classifiers and their 0.3 loss weights) and ResNet-50 as Caffe
defines it (the stride of a down-sampling block in its first 1x1 convolution, max pooling
without padding in ceil mode), so both frameworks do the same arithmetic. Modes: fp32 (strict),
tf32 (cuDNN's and cuBLAS's TF32), bf16 (autocast to bfloat16 over TF32, channels_last for
ResNet-50, as its users run it). Inputs and labels are random tensors made once on the GPU; each step is
zero_grad, forward, cross-entropy, backward and an SGD step (momentum 0.9, weight decay 5e-4).

  torch_nets.py --net=resnet50 --batch=128 --mode=fp32 [--iterations=50] [--warmup=10] [--graph]

Under torchrun (--nproc_per_node=N) each process trains a replica on its own GPU with
DistributedDataParallel (NCCL, its default 25 MiB buckets), batch per GPU; rank 0 prints.

prints one line "RESULT net=... batch=... mode=... ms=<median> back_to_back_ms=<mean of as many
steps run without waiting> peak_mib=<peak allocated>";
the peak covers the whole run (warm-up and cuDNN's algorithm search included).
"""
import argparse
import os
import statistics

import torch
import torchvision
from torch import nn


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(50 * 4 * 4, 500), nn.ReLU(inplace=True), nn.Linear(500, 10))


def caffenet():
    # Caffe pools in ceil mode; at 227x227 the sizes (55, 27, 13, 6) equal floor mode's anyway.
    def pool():
        return nn.MaxPool2d(3, 2, ceil_mode=True)

    def lrn():
        # PyTorch, like Caffe, divides alpha by the window size.
        return nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)

    def relu():
        return nn.ReLU(inplace=True)

    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4), relu(), pool(), lrn(),
        nn.Conv2d(96, 256, 5, padding=2, groups=2), relu(), pool(), lrn(),
        nn.Conv2d(256, 384, 3, padding=1), relu(),
        nn.Conv2d(384, 384, 3, padding=1, groups=2), relu(),
        nn.Conv2d(384, 256, 3, padding=1, groups=2), relu(), pool(),
        nn.Flatten(),
        nn.Linear(256 * 6 * 6, 4096), relu(), nn.Dropout(0.5),
        nn.Linear(4096, 4096), relu(), nn.Dropout(0.5),
        nn.Linear(4096, 1000))


def vgg16():
    # torchvision's configuration D with Caffe's head: no adaptive pooling is needed at 224x224.
    m = torchvision.models.vgg16(weights=None)
    m.avgpool = nn.Identity()
    return m


def resnet50():
    # torchvision strides the 3x3 convolution of a down-sampling block ("v1.5"); the Caffe
    # model strides the first 1x1 instead (about 6% fewer FLOPs). Move the stride back.
    m = torchvision.models.resnet50(weights=None)
    for stage in (m.layer2, m.layer3, m.layer4):
        stage[0].conv1.stride = (2, 2)
        stage[0].conv2.stride = (1, 1)
    m.maxpool = nn.MaxPool2d(3, 2, ceil_mode=True)  # Caffe's pool1: no padding, 112 -> 56
    return m


def conv_relu(c_in, c_out, k, stride=1):
    return [nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2), nn.ReLU(inplace=True)]


class Inception(nn.Module):
    """An inception module as Caffe's GoogLeNet writes it: 1x1; 1x1 then 3x3; 1x1 then 5x5; 3x3
    max pooling (stride 1, pad 1) then 1x1; a ReLU after each convolution; the four concatenated."""

    def __init__(self, c, c1, c3_reduce, c3, c5_reduce, c5, c_pool):
        super().__init__()
        self.branches = nn.ModuleList([
            nn.Sequential(*conv_relu(c, c1, 1)),
            nn.Sequential(*conv_relu(c, c3_reduce, 1), *conv_relu(c3_reduce, c3, 3)),
            nn.Sequential(*conv_relu(c, c5_reduce, 1), *conv_relu(c5_reduce, c5, 5)),
            nn.Sequential(nn.MaxPool2d(3, 1, padding=1), *conv_relu(c, c_pool, 1))])

    def forward(self, x):
        return torch.cat([b(x) for b in self.branches], 1)


class GoogLeNet(nn.Module):
    """models/googlenet/train_val.prototxt: the main classifier and the two auxiliary ones (on
    inception_4a and inception_4d), whose losses count 0.3 each (net_loss())."""

    def __init__(self):
        super().__init__()

        def pool():  # Caffe's ceil mode: 112 -> 56 -> 28 -> 14 -> 7
            return nn.MaxPool2d(3, 2, ceil_mode=True)

        def lrn():
            return nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)

        def aux(c):  # 14x14 -> 4x4 (5x5 windows 3 apart), as Caffe pools it
            return nn.Sequential(nn.AvgPool2d(5, 3), *conv_relu(c, 128, 1), nn.Flatten(),
                                 nn.Linear(128 * 4 * 4, 1024), nn.ReLU(inplace=True),
                                 nn.Dropout(0.7), nn.Linear(1024, 1000))

        self.to_4a = nn.Sequential(
            *conv_relu(3, 64, 7, stride=2), pool(), lrn(),
            *conv_relu(64, 64, 1), *conv_relu(64, 192, 3), lrn(), pool(),
            Inception(192, 64, 96, 128, 16, 32, 32), Inception(256, 128, 128, 192, 32, 96, 64),
            pool(), Inception(480, 192, 96, 208, 16, 48, 64))
        self.to_4d = nn.Sequential(
            Inception(512, 160, 112, 224, 24, 64, 64), Inception(512, 128, 128, 256, 24, 64, 64),
            Inception(512, 112, 144, 288, 32, 64, 64))
        self.to_end = nn.Sequential(
            Inception(528, 256, 160, 320, 32, 128, 128), pool(),
            Inception(832, 256, 160, 320, 32, 128, 128), Inception(832, 384, 192, 384, 48, 128, 128),
            nn.AvgPool2d(7, 1), nn.Flatten(), nn.Dropout(0.4), nn.Linear(1024, 1000))
        self.aux1, self.aux2 = aux(512), aux(528)

    def forward(self, x):
        a = self.to_4a(x)
        d = self.to_4d(a)
        return self.to_end(d), self.aux1(a), self.aux2(d)


def net_loss(loss_fn, out, y):
    """The net's training loss: GoogLeNet's three classifiers weighted as Caffe weights them."""
    if isinstance(out, tuple):
        return loss_fn(out[0], y) + 0.3 * (loss_fn(out[1], y) + loss_fn(out[2], y))
    return loss_fn(out, y)


NETS = {"lenet": (lenet, (1, 28, 28), 10), "caffenet": (caffenet, (3, 227, 227), 1000),
        "vgg16": (vgg16, (3, 224, 224), 1000), "resnet50": (resnet50, (3, 224, 224), 1000),
        "googlenet": (GoogLeNet, (3, 224, 224), 1000)}


def time_training(net, batch, mode, iterations, warmup, graph=False):
    """Median milliseconds per training step and peak allocated MiB over the whole run."""
    tf32 = mode != "fp32"
    bf16 = mode == "bf16"
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    if world > 1:
        torch.distributed.init_process_group("nccl", device_id=dev)
    torch.cuda.init()  # the allocator's statistics exist only once CUDA is initialized
    torch.cuda.reset_peak_memory_stats(dev)
    make, chw, classes = NETS[net]
    torch.manual_seed(0)
    model = make().to(dev).train()
    x = torch.randn(batch, *chw, device=dev)
    if bf16 and net == "resnet50":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (batch,), device=dev)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            step_loss = net_loss(loss_fn, model(x), y)
        step_loss.backward()
        opt.step()

    # A step to be captured warms up on a side stream, as PyTorch's whole-network capture asks.
    warm = torch.cuda.Stream() if graph else torch.cuda.current_stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        for _ in range(warmup):
            step()
    torch.cuda.current_stream().wait_stream(warm)
    torch.cuda.synchronize()
    if graph:
        # Gradients set to None, so the capture allocates them from the graph's pool; each
        # replay runs forward, backward and the optimizer step.
        graphed = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graphed):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                step_loss = net_loss(loss_fn, model(x), y)
            step_loss.backward()
            opt.step()
        step = graphed.replay
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
    ms = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end))
    # The same number of steps back to back, one wait at the end (as training runs them).
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        step()
    end.record()
    end.synchronize()
    back_to_back = start.elapsed_time(end) / iterations
    if world > 1:
        torch.distributed.destroy_process_group()
    return statistics.median(ms), back_to_back, torch.cuda.max_memory_allocated(dev) / 2**20


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--net", choices=sorted(NETS), required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--mode", choices=["fp32", "tf32", "bf16"], default="fp32")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--graph", action="store_true",
                   help="capture the whole step as a CUDA graph and time its replays (one GPU)")
    a = p.parse_args()
    ms, back_to_back, mib = time_training(a.net, a.batch, a.mode, a.iterations, a.warmup, a.graph)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"RESULT net={a.net} batch={a.batch} mode={a.mode} "
              f"gpus={os.environ.get('WORLD_SIZE', '1')} graph={int(a.graph)} ms={ms:.3f} "
              f"back_to_back_ms={back_to_back:.3f} peak_mib={mib:.1f}")


if __name__ == "__main__":
    main()
