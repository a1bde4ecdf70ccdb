from dpnoise._core import ChaCha20Core as ChaCha20
