"""``mx.gluon.data.vision``: image datasets from local files and image transforms."""

from __future__ import annotations

from . import transforms
from .datasets import CIFAR10, CIFAR100, MNIST, FashionMNIST, ImageFolderDataset, ImageRecordDataset

__all__ = ["CIFAR10", "CIFAR100", "MNIST", "FashionMNIST", "ImageFolderDataset", "ImageRecordDataset", "transforms"]
