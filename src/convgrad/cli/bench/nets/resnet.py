"""N3: ResNet-18 (torchvision's architecture and parameter names), 10 classes.

Written once against the drop-in API: ``define(nn)`` takes ``convgrad.nn`` or
``torch.nn`` and returns the model class, so both libraries run the very same code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["define", "loss", "optimizer"]

STAGES = (64, 128, 256, 512)


def define(nn: Any, cat: Any) -> Any:
    class BasicBlock(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride,
                                                          bias=False), nn.BatchNorm2d(c_out))

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    class ResNet18(nn.Module):
        def __init__(self, classes: int = 10, **_: Any) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            c_in = 64
            for i, c in enumerate(STAGES):
                stride = 1 if i == 0 else 2
                setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(c_in, c, stride),
                                                             BasicBlock(c, c, 1)))
                c_in = c
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(STAGES[-1], classes)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet18


def loss(lib: Any, out: Any, target: Any) -> Any:
    return lib.nn.functional.cross_entropy(out, target)


def optimizer(lib: Any, params: Any, kw: dict) -> Any:
    return lib.optim.SGD(params, lr=kw["lr"], momentum=kw["momentum"],
                         weight_decay=kw["weight_decay"])
