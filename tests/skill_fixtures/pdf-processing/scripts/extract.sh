#!/bin/sh
echo extract
